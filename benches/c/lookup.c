/*
 * The C side of the C ABI benchmark (scripts/bench-python.sh runs it through
 * benches/src/bin/reader_lookup.rs): N lookups of random keys through ew_reader_get, each timed
 * with clock_gettime, each vector read whole. Prints one line:
 *   p50_ns p99_ns p999_ns lookups_per_sec checksum
 *
 *   lookup STORE_DIR TABLE KEYS LOOKUPS
 */
#define _POSIX_C_SOURCE 199309L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgewise.h"

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s STORE_DIR TABLE KEYS LOOKUPS\n", argv[0]);
    return 2;
  }
  const char *table = argv[2];
  uint64_t keys = strtoull(argv[3], NULL, 10);
  size_t lookups = strtoull(argv[4], NULL, 10);
  EwReader *reader = NULL;
  if (ew_reader_open(argv[1], &reader) != EW_STATUS_OK) {
    fprintf(stderr, "open: %s\n", ew_last_error());
    return 1;
  }
  uint64_t *samples = malloc(lookups * sizeof *samples);
  uint64_t state = 0x9e3779b97f4a7c15u; /* the same xorshift as the Rust side */
  double checksum = 0;
  size_t table_len = strlen(table);
  uint64_t started = now_ns();
  for (size_t i = 0; i < lookups; i++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    uint64_t key = state % keys;
    const float *values;
    size_t len;
    uint64_t before = now_ns();
    if (ew_reader_get(reader, (const uint8_t *)table, table_len, key, &values, &len) != EW_STATUS_OK) {
      fprintf(stderr, "get %" PRIu64 ": %s\n", key, ew_last_error());
      return 1;
    }
    float sum = 0;
    for (size_t j = 0; j < len; j++) sum += values[j];
    samples[i] = now_ns() - before;
    checksum += sum;
  }
  double elapsed = (double)(now_ns() - started) / 1e9;
  qsort(samples, lookups, sizeof *samples, by_value);
  printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %.0f %.3f\n", samples[lookups / 2],
         samples[lookups * 99 / 100], samples[lookups * 999 / 1000], lookups / elapsed, checksum);
  ew_reader_release(reader);
  ew_reader_close(reader);
  free(samples);
  return 0;
}
