/*
 * read_features: prints feature vectors from the store edgewised publishes.
 *
 *   cc -I ffi/include ffi/examples/read_features.c target/release/libedgewise_ffi.a \
 *      -lpthread -ldl -lm -o read_features
 *   ./read_features /var/lib/edgewise/features users 42 43
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgewise.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s STORE_DIR TABLE KEY...\n", argv[0]);
    return 2;
  }
  EwReader *reader = NULL;
  if (ew_reader_open(argv[1], &reader) != EW_STATUS_OK) {
    fprintf(stderr, "open: %s\n", ew_last_error());
    return 1;
  }
  uint64_t version = 0;
  if (ew_reader_version(reader, &version) != EW_STATUS_OK) {
    fprintf(stderr, "version: %s\n", ew_last_error());
    ew_reader_close(reader);
    return 1;
  }
  printf("version %" PRIu64 "\n", version);
  const char *table = argv[2];
  for (int i = 3; i < argc; i++) {
    uint64_t key = strtoull(argv[i], NULL, 10);
    const float *values = NULL;
    size_t len = 0;
    EwStatus status = ew_reader_get(reader, (const uint8_t *)table, strlen(table), key, &values, &len);
    if (status == EW_STATUS_NOT_FOUND) {
      printf("%" PRIu64 ": not found\n", key);
      continue;
    }
    if (status != EW_STATUS_OK) {
      fprintf(stderr, "get: %s\n", ew_last_error());
      ew_reader_close(reader);
      return 1;
    }
    /* values stays valid until the next call on this reader. */
    printf("%" PRIu64 ":", key);
    for (size_t j = 0; j < len; j++) {
      printf(" %g", values[j]);
    }
    printf("\n");
  }
  ew_reader_release(reader);
  ew_reader_close(reader);
  return 0;
}
