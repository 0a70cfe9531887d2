/* SPDX-License-Identifier: MIT */
/*
 * example_opt.h - string options of the examples, table-driven: an option
 * letter and the field it sets.
 */
#ifndef EXAMPLE_OPT_H
#define EXAMPLE_OPT_H

#include <errno.h>
#include <stddef.h>

/* Option @c sets *@field to its argument. */
struct ex_str_opt {
	int c;
	const char **field;
};

/* Set the field of option @c among the @n of @map to @arg: 0, or -ENOENT
 * when @c is none of them. */
static inline int ex_str_opt_set(const struct ex_str_opt *map, size_t n, int c, const char *arg)
{
	for (size_t i = 0; i < n; i++) {
		if (map[i].c == c) {
			*map[i].field = arg;
			return 0;
		}
	}
	return -ENOENT;
}

#endif /* EXAMPLE_OPT_H */
