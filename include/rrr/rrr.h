/* SPDX-License-Identifier: MIT */
/* rrr/rrr.h - umbrella header: everything a program embedding rrr needs. */
#ifndef RRR_RRR_H
#define RRR_RRR_H

#include <rrr/xdr.h>
#include <rrr/oncrpc.h>
#include <rrr/rpcrdma.h>
#include <rrr/provider.h>
#include <rrr/reg_engine.h>
#include <rrr/stats.h>
#include <rrr/crc32c.h>
#include <rrr/wait.h>
#include <rrr/client.h>
#include <rrr/server.h>
#include <rrr/nfs3_xdr.h>
#include <rrr/nfs3_client.h>
#include <rrr/log.h>

#define RRR_VERSION_MAJOR 1
#define RRR_VERSION_MINOR 0
#define RRR_VERSION_PATCH 0
#define RRR_VERSION_STRING "1.0.0"

#endif
