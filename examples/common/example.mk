# examples/common/example.mk - how an example is built, included by its
# Makefile after it names SERVER, CLIENT (programs, each from NAME.c) and
# HDR (its protocol header). Built only against an INSTALLED librrr, found
# with pkg-config (set PKG_CONFIG_PATH / PKG_CONFIG_SYSROOT_DIR for a
# staged install); with the shared pieces of examples/common. OUT= puts the
# binaries elsewhere.
PKG_CONFIG ?= pkg-config
CC ?= cc
OUT ?= .
CFLAGS ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread $(shell $(PKG_CONFIG) --cflags rrr)
override LDLIBS += $(shell $(PKG_CONFIG) --libs rrr) -pthread
COMMON := ../common

all: $(OUT)/$(SERVER) $(OUT)/$(CLIENT)

$(OUT)/$(SERVER): $(SERVER).c $(HDR) $(COMMON)/example_svc.c $(COMMON)/example_svc.h \
		$(COMMON)/example_opt.h
	$(CC) $(CFLAGS) -o $@ $(SERVER).c $(COMMON)/example_svc.c $(LDFLAGS) $(LDLIBS)

$(OUT)/$(CLIENT): $(CLIENT).c $(HDR) $(COMMON)/example_clnt.c $(COMMON)/example_clnt.h \
		$(COMMON)/example_opt.h
	$(CC) $(CFLAGS) -o $@ $(CLIENT).c $(COMMON)/example_clnt.c $(LDFLAGS) $(LDLIBS)

clean:
	rm -f $(OUT)/$(SERVER) $(OUT)/$(CLIENT)

.PHONY: all clean
