/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* mptctl genkey, genpsk and pubkey: keys as base64 text, as wg(8) makes them. They need neither mptd
 * nor privileges. */

#include <sys/random.h>
#include <sys/stat.h>

#include "mptctl.h"
#include "noise.h"
#include "profile.h"

#define PUBKEY_INPUT_MAX 4096u /* a key is one line of 44 characters; refuse anything much bigger */

static int random_bytes(uint8_t *buf, size_t n) {
        size_t got = 0;

        while (got < n) {
                ssize_t r = getrandom(buf + got, n - got, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "mptctl: cannot get random bytes: %m\n");
                        return -errno;
                }
                got += (size_t) r;
        }
        return 0;
}

/* A secret goes to standard output: when that is a file others may read, make it private if it is
 * one the shell just created for us (empty, ours: as if the umask had been 077), else warn. */
static void restrict_stdout(const char *verb) {
        struct stat st;

        if (fstat(STDOUT_FILENO, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 077))
                return;
        if (st.st_size == 0 && st.st_uid == geteuid() && fchmod(STDOUT_FILENO, st.st_mode & 0700) == 0)
                return;
        fprintf(stderr, "mptctl: %s: warning: writing a secret key to a file that others can read; "
                "use (umask 077; mptctl %s > FILE)\n", verb, verb);
}

static int print_key(const uint8_t bytes[MPT_KEY_SIZE]) {
        MptKey key = { .set = true };
        char b64[MPT_KEY_BASE64_LEN + 1];

        memcpy(key.bytes, bytes, MPT_KEY_SIZE);
        printf("%s\n", mpt_key_to_base64(&key, b64));
        explicit_bzero(&key, sizeof key);
        explicit_bzero(b64, sizeof b64);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int print_secret(const char *verb, bool clamp) {
        uint8_t key[MPT_KEY_SIZE];
        int r;

        r = random_bytes(key, sizeof key);
        if (r < 0)
                return r;
        if (clamp)
                mpt_noise_clamp(key);
        restrict_stdout(verb);
        r = print_key(key);
        explicit_bzero(key, sizeof key);
        return r;
}

/* mptctl genkey : a new X25519 private key (clamped, as `wg genkey` prints it). */
int verb_genkey(int argc, char **argv) {
        (void) argv;
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl genkey\n");
                return -EINVAL;
        }
        return print_secret("genkey", true);
}

/* mptctl genpsk : a new pre-shared key, 32 random bytes. */
int verb_genpsk(int argc, char **argv) {
        (void) argv;
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl genpsk\n");
                return -EINVAL;
        }
        return print_secret("genpsk", false);
}

/* mptctl pubkey : the public key of the private key on standard input. */
int verb_pubkey(int argc, char **argv) {
        char buf[PUBKEY_INPUT_MAX + 1];
        uint8_t public_key[MPT_KEY_SIZE];
        MptKey private_key = {};
        size_t n = 0;
        int r;

        (void) argv;
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl pubkey < PRIVATE-KEY\n");
                return -EINVAL;
        }
        while (n < sizeof buf) {
                size_t k = fread(buf + n, 1, sizeof buf - n, stdin);
                if (k == 0)
                        break;
                n += k;
        }
        if (ferror(stdin)) {
                fprintf(stderr, "mptctl: pubkey: cannot read standard input: %m\n");
                r = -EIO;
                goto finish;
        }
        if (n > PUBKEY_INPUT_MAX || memchr(buf, 0, n))
                r = -EINVAL;
        else {
                buf[n] = 0;
                r = mpt_key_from_base64(buf, &private_key);
        }
        if (r < 0) {
                fprintf(stderr, "mptctl: pubkey: expected a private key on standard input: the base64 text of "
                        "%u bytes (44 characters), as `mptctl genkey` prints it\n", MPT_KEY_SIZE);
                r = -EINVAL;
                goto finish;
        }
        r = mpt_noise_public_key(public_key, private_key.bytes);
        if (r < 0) {
                fprintf(stderr, "mptctl: pubkey: cannot compute the public key: %s\n", strerror(-r));
                goto finish;
        }
        r = print_key(public_key);
finish:
        explicit_bzero(buf, sizeof buf);
        explicit_bzero(&private_key, sizeof private_key);
        return r;
}
