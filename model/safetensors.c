/* safetensors.c — map one .safetensors file and validate its header before
 * anything reads a byte of data. Format: huggingface/safetensors README
 * ("Format": u64 little-endian header size N, N bytes of JSON, then data;
 * data_offsets are [begin, end) relative to the data section). Every check
 * failing gives one error naming the file and, when there is one, the tensor. */
#define _DEFAULT_SOURCE /* madvise */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

size_t sc_dtype_size(sc_dtype dtype) {
  switch (dtype) {
  case SC_DTYPE_F32: return 4;
  case SC_DTYPE_F16:
  case SC_DTYPE_BF16: return 2;
  case SC_DTYPE_I8: return 1;
  case SC_DTYPE_Q8_0:
  case SC_DTYPE_Q4_0: /* blocks: see sc_dtype_row_bytes */
  case SC_DTYPE_MIXED: return 0;
  }
  return 0;
}

/* Every dtype the format defines (so that a checkpoint with, say, an I64
 * buffer we never read still validates); F32/F16/BF16 are usable, and I8
 * as the rows of a quantized matrix (checkpoint.c finds its scales). */
static const struct {
  const char *name;
  unsigned size;
} known_dtypes[] = {
    {"F64", 8},  {"F32", 4},  {"F16", 2},     {"BF16", 2},    {"I64", 8},
    {"I32", 4},  {"I16", 2},  {"I8", 1},      {"U64", 8},     {"U32", 4},
    {"U16", 2},  {"U8", 1},   {"BOOL", 1},    {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

static int cmp_tensor_name(const void *a, const void *b) {
  return strcmp(((const sc_st_tensor *)a)->name, ((const sc_st_tensor *)b)->name);
}

static int cmp_tensor_begin(const void *a, const void *b) {
  const sc_st_tensor *x = *(const sc_st_tensor *const *)a;
  const sc_st_tensor *y = *(const sc_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

void sc_st_file_close(sc_st_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
  free(f->tensors);
  if (f->map) munmap(f->map, f->map_len);
  free(f->owned);
  free(f->path);
  memset(f, 0, sizeof *f);
}

void sc_st_file_release(sc_st_file *f) {
  if (f && f->map) (void)madvise(f->map, f->map_len, MADV_DONTNEED);
}

const sc_st_tensor *sc_st_file_find(const sc_st_file *f, const char *name) {
  sc_st_tensor key = {.name = (char *)name};
  return bsearch(&key, f->tensors, f->n_tensors, sizeof key, cmp_tensor_name);
}

/* Reads one tensor entry; `data_len` bounds the offsets. */
static sc_status parse_entry(const char *path, const char *name, json_t *v,
                             uint64_t data_len, sc_st_tensor *t, sc_error *err) {
  SC_CHECK(json_is_object(v), err, SC_ERR_FORMAT,
           "%s: tensor '%s': header entry is not an object", path, name);
  json_t *dt = json_object_get(v, "dtype");
  json_t *shape = json_object_get(v, "shape");
  json_t *offs = json_object_get(v, "data_offsets");
  SC_CHECK(json_is_string(dt), err, SC_ERR_FORMAT, "%s: tensor '%s': no dtype string",
           path, name);
  SC_CHECK(json_is_array(shape), err, SC_ERR_FORMAT, "%s: tensor '%s': no shape array",
           path, name);
  SC_CHECK(json_is_array(offs) && json_array_size(offs) == 2, err, SC_ERR_FORMAT,
           "%s: tensor '%s': data_offsets is not [begin, end]", path, name);

  const char *ds = json_string_value(dt);
  unsigned esize = 0;
  for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; i++)
    if (strcmp(ds, known_dtypes[i].name) == 0) esize = known_dtypes[i].size;
  SC_CHECK(esize != 0, err, SC_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%.15s'", path,
           name, ds);
  snprintf(t->dtype_str, sizeof t->dtype_str, "%s", ds);
  t->usable = true;
  if (strcmp(ds, "F32") == 0) t->dtype = SC_DTYPE_F32;
  else if (strcmp(ds, "F16") == 0) t->dtype = SC_DTYPE_F16;
  else if (strcmp(ds, "BF16") == 0) t->dtype = SC_DTYPE_BF16;
  else if (strcmp(ds, "I8") == 0) t->dtype = SC_DTYPE_I8;
  else t->usable = false;

  size_t rank = json_array_size(shape);
  SC_CHECK(rank <= SC_ST_MAX_RANK, err, SC_ERR_FORMAT,
           "%s: tensor '%s': rank %zu is more than %d", path, name, rank, SC_ST_MAX_RANK);
  t->rank = (int)rank;
  /* numel * esize must not overflow: bound each dim and the running product
   * by the data section's length (a real tensor fits in it). */
  uint64_t numel = 1;
  for (size_t i = 0; i < rank; i++) {
    json_t *d = json_array_get(shape, i);
    SC_CHECK(json_is_integer(d) && json_integer_value(d) >= 0, err, SC_ERR_FORMAT,
             "%s: tensor '%s': shape[%zu] is not a non-negative integer", path, name, i);
    uint64_t dim = (uint64_t)json_integer_value(d);
    SC_CHECK(dim <= data_len + 1 && (dim == 0 || numel <= (data_len + 1) / dim), err,
             SC_ERR_FORMAT, "%s: tensor '%s': shape is larger than the file", path, name);
    numel *= dim;
    t->shape[i] = (int64_t)dim;
  }
  json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
  SC_CHECK(json_is_integer(b) && json_is_integer(e) && json_integer_value(b) >= 0 &&
               json_integer_value(e) >= json_integer_value(b),
           err, SC_ERR_FORMAT, "%s: tensor '%s': data_offsets are not 0 <= begin <= end",
           path, name);
  t->begin = (uint64_t)json_integer_value(b);
  t->end = (uint64_t)json_integer_value(e);
  SC_CHECK(t->end <= data_len, err, SC_ERR_FORMAT,
           "%s: tensor '%s': data_offsets [%llu, %llu) run past the end of the file "
           "(data section is %llu bytes)",
           path, name, (unsigned long long)t->begin, (unsigned long long)t->end,
           (unsigned long long)data_len);
  SC_CHECK(t->end - t->begin == numel * esize, err, SC_ERR_FORMAT,
           "%s: tensor '%s': %llu bytes of data but shape and dtype %s need %llu", path,
           name, (unsigned long long)(t->end - t->begin), ds,
           (unsigned long long)(numel * esize));
  return SC_OK;
}

static sc_status parse_header(sc_st_file *f, const uint8_t *base, size_t file_len,
                              sc_error *err) {
  const char *path = f->path;
  SC_CHECK(file_len >= 8, err, SC_ERR_FORMAT,
           "%s: truncated: %zu bytes, too short for the 8-byte header length", path,
           file_len);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | base[i];
  SC_CHECK(hlen >= 2 && hlen <= SC_ST_MAX_HEADER, err, SC_ERR_FORMAT,
           "%s: header length %llu is not sane (2..%u bytes)", path,
           (unsigned long long)hlen, SC_ST_MAX_HEADER);
  SC_CHECK(hlen <= file_len - 8, err, SC_ERR_FORMAT,
           "%s: header length %llu runs past the end of the file (%zu bytes)", path,
           (unsigned long long)hlen, file_len);
  uint64_t data_len = file_len - 8 - hlen;

  json_error_t jerr;
  json_t *root = json_loadb((const char *)base + 8, (size_t)hlen, JSON_REJECT_DUPLICATES,
                            &jerr);
  SC_CHECK(root, err, SC_ERR_FORMAT, "%s: header is not valid JSON (offset %d: %s)", path,
           jerr.position, jerr.text);
  sc_status st = SC_OK;
  if (!json_is_object(root)) {
    st = sc_error_set(err, SC_ERR_FORMAT, "%s: header is not a JSON object", path);
    goto out;
  }
  size_t cap = json_object_size(root);
  f->tensors = calloc(cap ? cap : 1, sizeof *f->tensors);
  if (!f->tensors) {
    st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory reading the header", path);
    goto out;
  }
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    if (strcmp(key, "__metadata__") == 0) {
      if (!json_is_object(val)) {
        st = sc_error_set(err, SC_ERR_FORMAT, "%s: __metadata__ is not an object", path);
        goto out;
      }
      continue;
    }
    sc_st_tensor *t = &f->tensors[f->n_tensors];
    st = parse_entry(path, key, val, data_len, t, err);
    if (st != SC_OK) goto out;
    t->name = strdup(key);
    if (!t->name) {
      st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
      goto out;
    }
    t->data = base + 8 + hlen + t->begin;
    f->n_tensors++;
  }

  /* No two tensors may share bytes: sort by begin and compare neighbours.
   * Empty tensors occupy nothing and cannot overlap. */
  if (f->n_tensors > 1) {
    const sc_st_tensor **order = malloc(f->n_tensors * sizeof *order);
    if (!order) {
      st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
      goto out;
    }
    for (size_t i = 0; i < f->n_tensors; i++) order[i] = &f->tensors[i];
    qsort(order, f->n_tensors, sizeof *order, cmp_tensor_begin);
    const sc_st_tensor *prev = NULL;
    for (size_t i = 0; i < f->n_tensors; i++) {
      const sc_st_tensor *t = order[i];
      if (t->begin == t->end) continue;
      if (prev && t->begin < prev->end) {
        st = sc_error_set(err, SC_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets [%llu, %llu) overlap tensor "
                          "'%s' [%llu, %llu)",
                          path, t->name, (unsigned long long)t->begin,
                          (unsigned long long)t->end, prev->name,
                          (unsigned long long)prev->begin, (unsigned long long)prev->end);
        break;
      }
      prev = t;
    }
    free(order);
    if (st != SC_OK) goto out;
  }
  qsort(f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
out:
  json_decref(root);
  return st;
}

sc_status sc_st_file_open(const char *path, sc_st_file *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  out->path = strdup(path);
  SC_CHECK(out->path, err, SC_ERR_NOMEM, "%s: out of memory", path);
  int fd;
  sc_status ost = sc_file_open_regular(path, &fd, err);
  if (ost != SC_OK) {
    sc_st_file_close(out);
    return ost;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    sc_st_file_close(out);
    return sc_error_set(err, SC_ERR_IO, "%s: %s", path, strerror(e));
  }
  size_t len = (size_t)sb.st_size;
  sc_status st = SC_OK;
  if (len < 8) {
    /* Checked before mmap, which cannot map an empty file. */
    close(fd);
    st = sc_error_set(err, SC_ERR_FORMAT,
                      "%s: truncated: %zu bytes, too short for the 8-byte header length",
                      path, len);
    sc_st_file_close(out);
    return st;
  }
  void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (map == MAP_FAILED) {
    sc_st_file_close(out);
    return sc_error_set(err, SC_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
  }
  out->map = map;
  out->map_len = len;
  st = parse_header(out, map, len, err);
  if (st != SC_OK) sc_st_file_close(out);
  return st;
}
