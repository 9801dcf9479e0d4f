/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The crypto floor of secure mode: how many bytes per second one core seals and opens through
 * mpt_secure_seal() and mpt_secure_open() (libcrypto's AES-256-GCM and ChaCha20-Poly1305, the
 * calls mptd makes, per-thread contexts and all), at the datagram size mptd sends (about 1400
 * bytes) and at 64 KiB. Not a test: a benchmark that prints figures.
 *
 *   ninja -C build tests/bench/aead-speed && build/tests/bench/aead-speed [SECONDS]
 *
 * Every figure is the best of three timed runs (the machine may be shared); "bytes" are
 * plaintext bytes; CPU time of the thread, so time spent waiting for the CPU does not count. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "secure.h"

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static double cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void fill(uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (i * 131 + 7);
}

typedef enum { SEAL, OPEN, MEMCPY, BATCH } Op;

static MptSecureKeys keys;

/* The batch pattern of mptd: GSO batches of 1400-byte datagrams, about 64 KiB, sealed from one
 * buffer into another, copied (as the kernel's receive would) and opened in place. */
static double run_batch(MptCipher cipher, double secs) {
        enum { DGRAM = 1400, N = 46, ROOM = DGRAM + MPT_SECURE_OVERHEAD };
        uint8_t *in = malloc(N * DGRAM), *out = malloc(N * ROOM), *rx = malloc(N * ROOM);
        uint64_t counter = 1, bytes = 0;
        double t0, c0, c1;

        if (!in || !out || !rx)
                abort();
        fill(in, N * DGRAM);
        t0 = now();
        c0 = cpu();
        do {
                for (int i = 0; i < N; i++)
                        if (mpt_secure_seal_from(out + (size_t) i * ROOM, in + (size_t) i * DGRAM, DGRAM, &keys, cipher,
                                                 0, (MptSecureSender) { .path_id = 1, .counter = counter++ }) != ROOM)
                                abort();
                memcpy(rx, out, N * ROOM);
                for (int i = 0; i < N; i++)
                        if (mpt_secure_open(rx + (size_t) i * ROOM, ROOM, &keys) != -1)
                                abort();
                bytes += N * DGRAM;
        } while (now() - t0 < secs);
        c1 = cpu();
        free(in);
        free(out);
        free(rx);
        return (double) bytes * 8 / (c1 - c0) / 1e9;
}

/* Gbit/s of plaintext on one core over about secs seconds of wall time. Opening copies the
 * sealed datagram in first (opening is in place), as MEMCPY shows what that costs alone. */
static double run(Op op, MptCipher cipher, size_t len, double secs) {
        uint8_t *buf = malloc(len + MPT_SECURE_OVERHEAD), *src = malloc(len + MPT_SECURE_OVERHEAD);
        uint64_t counter = 1, bytes = 0;
        double t0, c0, c1;

        if (!buf || !src)
                abort();
        fill(src + MPT_SECURE_HEADER_SIZE, len);
        if (mpt_secure_seal(src, len, &keys, cipher, 0, (MptSecureSender) { .path_id = 1, .counter = counter }) == 0)
                abort();
        t0 = now();
        c0 = cpu();
        do {
                for (int i = 0; i < 64; i++) {
                        switch (op) {
                        case SEAL:
                                if (mpt_secure_seal(buf, len, &keys, cipher, 0, (MptSecureSender) { .path_id = 1, .counter = counter++ }) == 0)
                                        abort();
                                break;
                        case OPEN:
                                memcpy(buf, src, len + MPT_SECURE_OVERHEAD);
                                if (mpt_secure_open(buf, len + MPT_SECURE_OVERHEAD, &keys) != -1)
                                        abort();
                                break;
                        case MEMCPY:
                                memcpy(buf, src, len + MPT_SECURE_OVERHEAD);
                                __asm__ volatile("" : : "r"(buf) : "memory");
                                break;
                        case BATCH:
                                abort(); /* run_batch() */
                        }
                        bytes += len;
                }
        } while (now() - t0 < secs);
        c1 = cpu();
        free(buf);
        free(src);
        return (double) bytes * 8 / (c1 - c0) / 1e9;
}

static double best_of_3(Op op, MptCipher cipher, size_t len, double secs) {
        double best = 0;
        for (int k = 0; k < 3; k++) {
                double g = op == BATCH ? run_batch(cipher, secs) : run(op, cipher, len, secs);
                if (g > best)
                        best = g;
        }
        return best;
}

int main(int argc, char **argv) {
        static const size_t sizes[] = { 1400, 65536 };
        static const char *const op_name[] = { "seal", "open" };
        double secs = argc > 1 ? atof(argv[1]) : 1.0;
        uint8_t psk[MPT_KEY_SIZE];
        bool aes;

        if (secs <= 0)
                secs = 1.0;
        if (mpt_secure_init() < 0) {
                fprintf(stderr, "aead-speed: cannot initialise %s\n", mpt_secure_library());
                return 1;
        }
        aes = mpt_secure_aes_available();
        if (getrandom(psk, sizeof psk, 0) != sizeof psk || mpt_secure_derive(psk, 1, aes, &keys) < 0)
                return 1;
        printf("%s; AES instructions %s; Gbit/s of plaintext per core (CPU time), best of 3 x %.1f s\n",
               mpt_secure_library(), aes ? "present" : "ABSENT (AES-256-GCM not used)", secs);
        for (int c = aes ? MPT_CIPHER_AES256_GCM : MPT_CIPHER_CHACHA20_POLY1305; c >= 0; c--)
                for (int op = SEAL; op <= OPEN; op++) {
                        printf("  %-17s %s", mpt_cipher_to_string((MptCipher) c), op_name[op]);
                        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                                printf("  %6zu B: %7.2f Gbit/s", sizes[s],
                                       best_of_3((Op) op, (MptCipher) c, sizes[s], secs));
                        printf("\n");
                }
        printf("  %-22s", "memcpy (cache-hot)");
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                printf("  %6zu B: %7.2f Gbit/s", sizes[s], best_of_3(MEMCPY, 0, sizes[s], secs));
        printf("\n");
        for (int c = aes ? MPT_CIPHER_AES256_GCM : MPT_CIPHER_CHACHA20_POLY1305; c >= 0; c--) {
                double g = best_of_3(BATCH, (MptCipher) c, 0, secs);
                /* Both ends share the machine's cores: CPU time per Gbit of seal + open together. */
                printf("  %s seal + open of 64 KiB batches of 1400 B datagrams: %.2f Gbit/s, %.1f ms of CPU per Gbit\n",
                       mpt_cipher_to_string((MptCipher) c), g, 1000 / g);
        }
        mpt_secure_keys_wipe(&keys);
        explicit_bzero(psk, sizeof psk);
        return 0;
}
