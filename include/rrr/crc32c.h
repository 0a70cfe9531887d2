/* SPDX-License-Identifier: MIT */
/*
 * rrr/crc32c.h - CRC32C (Castagnoli), the checksum of MPA FPDUs (RFC 5044)
 * and iSCSI (RFC 3720), for the library and for programs that check data.
 */
#ifndef RRR_CRC32C_H
#define RRR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/*
 * rrr_crc32c - the standard CRC32C of @len bytes at @buf, continuing @crc.
 *
 * Computes CRC-32C: reflected polynomial 0x82F63B78, register preset to all
 * ones and the result inverted (as iSCSI and MPA define it), so
 * rrr_crc32c(0, "123456789", 9) == 0xE3069283. Pass 0 to start; pass the
 * previous result to continue, so a running value chains across calls:
 * rrr_crc32c(rrr_crc32c(0, a, n), b, m) equals the CRC of a followed by b.
 * On the wire (MPA, iSCSI) the value is sent least significant byte first.
 *
 * @buf may be NULL when @len is 0 (the result is then @crc). Any length and
 * alignment. Pure: thread-safe, allocates nothing, never blocks, cannot
 * fail. Uses the fastest method of the CPU it runs on (chosen at run time).
 */
uint32_t rrr_crc32c(uint32_t crc, const void *buf, size_t len);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* RRR_CRC32C_H */
