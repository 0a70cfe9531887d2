/* SPDX-License-Identifier: MIT */
/*
 * common/probes.h - USDT (user-level statically defined tracing) probes of
 * the library, provider "rrr" (docs/tracing.md lists each with its
 * arguments and a perf / bpftrace one-liner).
 *
 * A probe is a single nop in the code and a note in the ELF section
 * .note.stapsdt (readelf -n shows them): it costs nothing until a tracer
 * (perf probe, bpftrace usdt:, systemtap) attaches, which then reads the
 * arguments from where the compiler left them. Built with <sys/sdt.h>
 * (Debian: systemtap-sdt-dev, in make deps) when it is there; without it,
 * or with -DRRR_NO_PROBES, every RRR_PROBEn() compiles to nothing and its
 * arguments are not evaluated.
 *
 * Arguments are integers or pointers (strings are passed as pointers: read
 * them with str() in bpftrace). A probe site must not rely on its
 * arguments being evaluated.
 */
#ifndef RRR_COMMON_PROBES_H
#define RRR_COMMON_PROBES_H

#if !defined(RRR_NO_PROBES) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define RRR_HAVE_PROBES 1
#endif
#endif

#ifdef RRR_HAVE_PROBES
#define RRR_PROBE1(name, a)	       DTRACE_PROBE1(rrr, name, a)
#define RRR_PROBE2(name, a, b)	       DTRACE_PROBE2(rrr, name, a, b)
#define RRR_PROBE3(name, a, b, c)      DTRACE_PROBE3(rrr, name, a, b, c)
#define RRR_PROBE4(name, a, b, c, d)   DTRACE_PROBE4(rrr, name, a, b, c, d)
#define RRR_PROBE5(name, a, b, c, d, e) DTRACE_PROBE5(rrr, name, a, b, c, d, e)
#else
/* sizeof: the arguments are type-checked but never evaluated */
#define RRR_PROBE1(name, a)	       ((void)sizeof(a))
#define RRR_PROBE2(name, a, b)	       ((void)sizeof(a), (void)sizeof(b))
#define RRR_PROBE3(name, a, b, c)      ((void)sizeof(a), (void)sizeof(b), (void)sizeof(c))
#define RRR_PROBE4(name, a, b, c, d)                                                               \
	((void)sizeof(a), (void)sizeof(b), (void)sizeof(c), (void)sizeof(d))
#define RRR_PROBE5(name, a, b, c, d, e)                                                            \
	((void)sizeof(a), (void)sizeof(b), (void)sizeof(c), (void)sizeof(d), (void)sizeof(e))
#endif

#endif /* RRR_COMMON_PROBES_H */
