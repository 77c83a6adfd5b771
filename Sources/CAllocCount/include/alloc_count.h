#ifndef EDGE_ALLOC_COUNT_H
#define EDGE_ALLOC_COUNT_H
// Counts heap allocations made by the calling thread between begin and end.
// Linked only into edge-bench: it interposes malloc/calloc/realloc/
// posix_memalign/aligned_alloc (glibc's __libc_* do the work), so "the loop
// allocates nothing in steady state" is measured, not assumed.
void edge_alloc_count_begin(void);
unsigned long edge_alloc_count_end(void);
#endif
