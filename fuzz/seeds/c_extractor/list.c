#include <stdio.h>
#include "list.h"
#define LIMIT 10
#define SQUARE(x) \
	((x) * (x))

/* Adds a node.
 * Returns the new length. */
static int
list_add(struct list *l, struct node *n)
{
	int count = l->len + 1;
	n->next = l->head;
	l->head = n;
	return SQUARE(count) + LIMIT + helper(count) + global_total;
}

struct node {
	int value;
	struct node *next;
	union {
		int tag;
		long wide;
	};
	struct meta { int owner; } meta;
};

typedef struct {
	int x, y;
} point_t;
typedef int (*visit_fn)(struct node *);

enum color { RED, GREEN = 2,
	BLUE };

int global_total = 0, *global_ptr;
extern int elsewhere;
int prototype_only(int);

#ifdef CONFIG_FAST
int speed(void) { return 1; }
#else
static inline int speed(void) { return 0; }
#endif

SYSCALL_DEFINE1(reset, int, how)
{
	return list_add(0, 0);
}
