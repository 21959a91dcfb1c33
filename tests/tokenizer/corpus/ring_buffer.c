/* ring_buffer.c — a fixed-size byte ring used by the parity corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ring {
    uint8_t *data;
    size_t cap, head, tail;   /* head == tail: empty */
} ring;

static size_t ring_used(const ring *r) {
    return (r->tail + r->cap - r->head) % r->cap;
}

int ring_push(ring *r, const void *src, size_t n) {
    if (n >= r->cap - ring_used(r)) return -1;      // would overflow
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++) {
        r->data[r->tail] = p[i];
        r->tail = (r->tail + 1) % r->cap;
    }
    return 0;
}

#define RING_MAGIC 0xDEADBEEFu
#if defined(__GNUC__) && __GNUC__ >= 12
#  define LIKELY(x) __builtin_expect(!!(x), 1)
#endif

int main(int argc, char **argv) {
	ring r = {malloc(4096), 4096, 0, 0};
	if (!r.data) return 1;
	const char *msg = argc > 1 ? argv[1] : "hello, world\n";
	printf("%d %s %zu\n", ring_push(&r, msg, strlen(msg)), msg, ring_used(&r));
	free(r.data);
	return 0;
}
