/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The crypto floor of secure mode: how many bytes per second one core seals and opens with
 * libsodium's AES-256-GCM (precomputed state, as mptd uses it) and ChaCha20-Poly1305 (IETF), at
 * the datagram sizes mptd sends (about 1400 bytes) and at 64 KiB. Not a test: a benchmark that
 * prints figures.
 *
 *   cc -O2 -o aead-speed tests/bench/aead-speed.c -lsodium && ./aead-speed [SECONDS]
 *
 * Every figure is the best of three timed runs (the machine may be shared); "bytes" are
 * plaintext bytes. */

#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AD_LEN 20u
#define TAG_LEN 16u

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Per-thread CPU time, so that time the process spent waiting for the CPU does not count. */
static double cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

typedef enum { AES_SEAL, AES_OPEN, CHACHA_SEAL, CHACHA_OPEN, MEMCPY } Op;

static const char *const op_name[] = { "aes-256-gcm seal", "aes-256-gcm open", "chacha20-poly1305 seal",
                                       "chacha20-poly1305 open", "memcpy (cache-hot)" };

static crypto_aead_aes256gcm_state aes_state;
static uint8_t key[32];

/* The batch pattern of mptd: GSO batches of 1400-byte datagrams, about 64 KiB, sealed from one
 * buffer into another and opened in place in a third, one after the other (L2, not L1). */
static double run_batch(bool aes, double secs) {
        enum { DGRAM = 1400, N = 46, ROOM = DGRAM + AD_LEN + TAG_LEN };
        uint8_t *in = malloc(N * DGRAM), *out = malloc(N * ROOM), *rx = malloc(N * ROOM);
        uint8_t nonce[12] = { 0 }, ad[AD_LEN] = { 0xe2 };
        uint64_t counter = 0, bytes = 0;
        double t0, c0, c1;

        if (!in || !out || !rx)
                abort();
        randombytes_buf(in, N * DGRAM);
        t0 = now();
        c0 = cpu();
        do {
                for (int i = 0; i < N; i++) {
                        uint8_t *c = out + (size_t) i * ROOM;
                        memcpy(nonce + 4, &counter, 8);
                        counter++;
                        if (aes)
                                crypto_aead_aes256gcm_encrypt_detached_afternm(c, c + DGRAM, NULL, in + (size_t) i * DGRAM,
                                                                               DGRAM, ad, AD_LEN, NULL, nonce, &aes_state);
                        else
                                crypto_aead_chacha20poly1305_ietf_encrypt_detached(c, c + DGRAM, NULL,
                                                                                   in + (size_t) i * DGRAM, DGRAM, ad,
                                                                                   AD_LEN, NULL, nonce, key);
                }
                memcpy(rx, out, N * ROOM); /* what the kernel's copy would be */
                counter -= N;
                for (int i = 0; i < N; i++) {
                        uint8_t *c = rx + (size_t) i * ROOM;
                        memcpy(nonce + 4, &counter, 8);
                        counter++;
                        if ((aes ? crypto_aead_aes256gcm_decrypt_detached_afternm(c, NULL, c, DGRAM, c + DGRAM, ad, AD_LEN,
                                                                                  nonce, &aes_state)
                                 : crypto_aead_chacha20poly1305_ietf_decrypt_detached(c, NULL, c, DGRAM, c + DGRAM, ad,
                                                                                      AD_LEN, nonce, key)) != 0)
                                abort();
                }
                bytes += N * DGRAM;
        } while (now() - t0 < secs);
        c1 = cpu();
        free(in);
        free(out);
        free(rx);
        return (double) bytes * 8 / (c1 - c0) / 1e9;
}

/* Gbit/s of plaintext on one core (CPU time) over about secs seconds of wall time. */
static double run(Op op, size_t len, double secs) {
        uint8_t *buf = malloc(len + AD_LEN + TAG_LEN), *src = malloc(len + AD_LEN + TAG_LEN);
        uint8_t nonce[12] = { 0 }, ad[AD_LEN] = { 0xe2 };
        uint64_t counter = 0, bytes = 0;
        double t0, c0, c1;

        if (!buf || !src)
                abort();
        randombytes_buf(src, len + AD_LEN + TAG_LEN);
        memcpy(buf, src, len);
        /* Something valid to open, sealed under a fixed nonce and opened under it again and again
         * (the cost does not depend on the nonce). */
        if (op == AES_OPEN)
                crypto_aead_aes256gcm_encrypt_detached_afternm(buf, buf + len, NULL, buf, len, ad, AD_LEN, NULL, nonce,
                                                               &aes_state);
        else if (op == CHACHA_OPEN)
                crypto_aead_chacha20poly1305_ietf_encrypt_detached(buf, buf + len, NULL, buf, len, ad, AD_LEN, NULL,
                                                                   nonce, key);
        memcpy(src, buf, len + TAG_LEN);

        t0 = now();
        c0 = cpu();
        do {
                for (int i = 0; i < 64; i++) {
                        switch (op) {
                        case AES_SEAL:
                                memcpy(nonce + 4, &counter, 8);
                                counter++;
                                crypto_aead_aes256gcm_encrypt_detached_afternm(buf, buf + len, NULL, buf, len, ad,
                                                                               AD_LEN, NULL, nonce, &aes_state);
                                break;
                        case CHACHA_SEAL:
                                memcpy(nonce + 4, &counter, 8);
                                counter++;
                                crypto_aead_chacha20poly1305_ietf_encrypt_detached(buf, buf + len, NULL, buf, len, ad,
                                                                                   AD_LEN, NULL, nonce, key);
                                break;
                        case AES_OPEN:
                                /* Out of place from the sealed copy: in place would leave plaintext. */
                                if (crypto_aead_aes256gcm_decrypt_detached_afternm(buf, NULL, src, len, src + len, ad,
                                                                                   AD_LEN, nonce, &aes_state) != 0)
                                        abort();
                                break;
                        case CHACHA_OPEN:
                                if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(buf, NULL, src, len, src + len,
                                                                                       ad, AD_LEN, nonce, key) != 0)
                                        abort();
                                break;
                        case MEMCPY:
                                memcpy(buf, src, len);
                                __asm__ volatile("" : : "r"(buf) : "memory");
                                break;
                        }
                        bytes += len;
                }
        } while (now() - t0 < secs);
        c1 = cpu();
        free(buf);
        free(src);
        return (double) bytes * 8 / (c1 - c0) / 1e9;
}

int main(int argc, char **argv) {
        static const size_t sizes[] = { 1400, 65536 };
        double secs = argc > 1 ? atof(argv[1]) : 1.0;
        int have_aes;

        if (sodium_init() < 0)
                return 1;
        if (secs <= 0)
                secs = 1.0;
        have_aes = crypto_aead_aes256gcm_is_available();
        randombytes_buf(key, sizeof key);
        if (have_aes)
                crypto_aead_aes256gcm_beforenm(&aes_state, key);
        printf("libsodium %s; AES-256-GCM %s; Gbit/s of plaintext per core (CPU time), best of 3 x %.1f s\n",
               sodium_version_string(), have_aes ? "available" : "NOT available", secs);
        for (int op = AES_SEAL; op <= MEMCPY; op++) {
                if (!have_aes && (op == AES_SEAL || op == AES_OPEN))
                        continue;
                printf("  %-24s", op_name[op]);
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                        double best = 0;
                        for (int k = 0; k < 3; k++) {
                                double g = run((Op) op, sizes[s], secs);
                                if (g > best)
                                        best = g;
                        }
                        printf("  %6zu B: %7.2f Gbit/s", sizes[s], best);
                }
                printf("\n");
        }
        for (int aes = have_aes; aes >= 0; aes--) {
                double best = 0;
                for (int k = 0; k < 3; k++) {
                        double g = run_batch(aes, secs);
                        if (g > best)
                                best = g;
                }
                /* Both ends share the machine's cores: seconds per Gbit of seal + open together. */
                printf("  %s seal + open of 64 KiB batches of 1400 B datagrams: %.2f Gbit/s, %.1f ms of CPU per Gbit\n",
                       aes ? "aes-256-gcm" : "chacha20-poly1305", best, 1000 / best);
        }
        return 0;
}
