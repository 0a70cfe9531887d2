/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/helpers/fs_codecs.c - rrr-server's NLM/NSM codecs and its RPC
 * client calls (server/fs/nlm_xdr.c, rpc_call.c: the program's, not the
 * library's), compiled once into the test binary for nlm_codec.c and nlm.c.
 */
#include "server/fs/nlm_xdr.c"
#include "server/fs/rpc_call.c"
