# kvgate build. Sources are discovered: every src/<part>/*.c and
# src/<part>/<family>/*.c goes into libkvgate.a, every src/cmd/*.c (the
# commands) into libkvgate_cmd.a, every tests/unit/<part>/test_*.c becomes one test program,
# every fuzz/fuzz_*.c one libFuzzer target. Adding a file needs no edit here.
#
#   make                 release build   -> build/release/kvgate
#   make BUILD=asan      ASan+UBSan      -> build/asan/kvgate
#   make test            what CI runs (scripts/test.sh does deps + this)
#   make fuzz            libFuzzer targets (clang) -> build/fuzz/bin/
#   make install         bin/kvgate and share/man/man1/kvgate.1 under $(DESTDIR)$(PREFIX)
#   make deb             a Debian package -> build/deb/ (scripts/build-deb.sh)
# Benchmark programs bench/<name>/*.c are built to build/<mode>/bench/<name>/.

BUILD   ?= release
OUT     := build/$(BUILD)
CC      ?= cc
PKGS    := libuv libzmq msgpack hiredis libcjson yaml-0.1 libpcre2-8 libxxhash openssl
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp

PREFIX  ?= /usr/local
DESTDIR ?=

# The commit kvgate is built from, for `kvgate --version` (src/cmd/version.c):
# git's when this directory is the top of a git checkout ("-dirty" after the
# hash when tracked files differ from it), else KVG_COMMIT as given (the
# Dockerfile passes it: its context has no .git), else none, which --version
# says. Only characters a version may hold are kept.
# safe.directory: `sudo make install` in a checkout owned by another user
# still reads its commit (git refuses such a repository otherwise, and the
# binary would be relinked as "commit unknown").
GIT := git -c safe.directory='*'
ifeq ($(origin KVG_COMMIT),undefined)
ifeq ($(shell $(GIT) rev-parse --show-toplevel 2>/dev/null),$(CURDIR))
KVG_COMMIT := $(shell c=$$($(GIT) rev-parse --short=12 HEAD 2>/dev/null) && \
                { $(GIT) diff --quiet HEAD -- 2>/dev/null && echo $$c || echo $$c-dirty; })
KVG_COMMIT_DATE := $(shell $(GIT) log -1 --format=%cs HEAD 2>/dev/null)
endif
endif
override KVG_COMMIT := $(shell printf '%s' '$(KVG_COMMIT)' | tr -cd 'A-Za-z0-9._+-')
override KVG_COMMIT_DATE := $(shell printf '%s' '$(KVG_COMMIT_DATE)' | tr -cd '0-9-')

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CSTD    := -std=c11 -D_GNU_SOURCE
DEPFLAGS = -MMD -MP
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LIBS    := $(PKG_LIBS) -lpthread -lm

ifeq ($(BUILD),asan)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDOPT   := -fsanitize=address,undefined
else ifeq ($(BUILD),fuzz)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
LDOPT   := -fsanitize=fuzzer,address,undefined
else ifeq ($(BUILD),debug)
OPT     := -O0 -g
LDOPT   :=
else
OPT     := -O2 -g
LDOPT   :=
endif

CFLAGS_ALL = $(CSTD) $(OPT) $(WARN) -Isrc -I$(LLHTTP_INC) $(PKG_CFLAGS) $(CFLAGS)

CMD_SRCS   := $(wildcard src/cmd/*.c)
CMD_OBJS   := $(CMD_SRCS:%.c=$(OUT)/%.o)
LIB_SRCS   := $(filter-out $(CMD_SRCS),$(wildcard src/*/*.c src/*/*/*.c))
LIB_OBJS   := $(LIB_SRCS:%.c=$(OUT)/%.o)
LLHTTP_OBJS := $(OUT)/llhttp/api.o $(OUT)/llhttp/http.o $(OUT)/llhttp/llhttp.o
TEST_SRCS  := $(wildcard tests/unit/*/test_*.c)
TEST_BINS  := $(TEST_SRCS:tests/unit/%.c=$(OUT)/t/%)
TEST_SUPPORT := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.c=$(OUT)/%.o)
TOOL_SRCS  := $(wildcard tests/tools/*.c)
TOOL_BINS  := $(TOOL_SRCS:tests/tools/%.c=$(OUT)/tools/%)
BENCH_SRCS := $(wildcard bench/*/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(OUT)/bench/%)

.PHONY: all test unit clean fuzz fuzz-bins format format-check bench bench-suite install \
        uninstall deb FORCE
all: $(OUT)/kvgate $(OUT)/kvgate.1 $(TEST_BINS) $(TOOL_BINS) $(BENCH_BINS)

# Made anew each time: ar would keep the objects of files since moved or deleted.
$(OUT)/libkvgate.a: $(LIB_OBJS) $(LLHTTP_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(OUT)/libkvgate_cmd.a: $(CMD_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(OUT)/kvgate: $(OUT)/src/main.o $(OUT)/libkvgate_cmd.a $(OUT)/libkvgate.a
	$(CC) $(LDOPT) -o $@ $^ $(LIBS)

# The man page, made by the binary from its commands' --help (src/cmd/man.c).
$(OUT)/kvgate.1: $(OUT)/kvgate
	$(OUT)/kvgate help --man >$@.tmp && mv $@.tmp $@

# version.o carries the commit; the stamp changes (and version.o is rebuilt)
# only when the commit does.
$(OUT)/version.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(KVG_COMMIT) $(KVG_COMMIT_DATE)' | cmp -s - $@ 2>/dev/null || \
	  echo '$(KVG_COMMIT) $(KVG_COMMIT_DATE)' >$@
$(OUT)/src/cmd/version.o: $(OUT)/version.stamp
$(OUT)/src/cmd/version.o: CFLAGS_ALL += -DKVG_COMMIT='"$(KVG_COMMIT)"' \
                                        -DKVG_COMMIT_DATE='"$(KVG_COMMIT_DATE)"'

$(OUT)/src/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

$(OUT)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests $(DEPFLAGS) -c -o $@ $<

# llhttp is Node's parser, compiled from Debian's node-llhttp sources (not ours:
# its own warnings are not ours to fix).
$(OUT)/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(OPT) -w -I$(LLHTTP_INC) -c -o $@ $<

$(OUT)/t/%: $(OUT)/tests/unit/%.o $(TEST_SUPPORT_OBJS) $(OUT)/libkvgate_cmd.a $(OUT)/libkvgate.a
	@mkdir -p $(@D)
	$(CC) $(LDOPT) -o $@ $^ $(LIBS)

$(OUT)/tools/%: $(OUT)/tests/tools/%.o $(OUT)/libkvgate.a
	@mkdir -p $(@D)
	$(CC) $(LDOPT) -o $@ $^ $(LIBS)

$(OUT)/bench/%: $(OUT)/benchobj/%.o $(OUT)/libkvgate.a
	@mkdir -p $(@D)
	$(CC) $(LDOPT) -o $@ $^ $(LIBS)

$(OUT)/benchobj/%.o: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

test: all
	bash tests/run.sh $(OUT)

unit: all
	bash tests/run.sh $(OUT) unit

# Fuzz targets: clang + libFuzzer, with ASan/UBSan. The library is built once
# with coverage instrumentation (BUILD=fuzz), each target links against it.
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=build/fuzz/bin/%)
fuzz:
	$(MAKE) BUILD=fuzz CC=clang fuzz-bins
fuzz-bins: $(FUZZ_BINS)
build/fuzz/bin/%: fuzz/%.c build/fuzz/libkvgate.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< build/fuzz/libkvgate.a $(LIBS)

# The routing benchmark (llm-d's table, offline and live); writes
# bench/results/routing.md and its SVGs.
bench:
	bash bench/routing/run.sh

# The routing suite: every workload against every policy, offline, 3 seeds
# (under 10 minutes on 2 cores); writes bench/results/routing-suite.md.
bench-suite: all
	bash bench/routing/suite.sh

install: $(OUT)/kvgate $(OUT)/kvgate.1
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(OUT)/kvgate $(DESTDIR)$(PREFIX)/bin/kvgate
	install -m 0644 $(OUT)/kvgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvgate.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/kvgate $(DESTDIR)$(PREFIX)/share/man/man1/kvgate.1

deb:
	bash scripts/build-deb.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(LIB_OBJS:.o=.d) $(CMD_OBJS:.o=.d) $(OUT)/src/main.d $(TEST_SRCS:tests/%.c=$(OUT)/tests/%.d) \
         $(TEST_SUPPORT:tests/%.c=$(OUT)/tests/%.d) $(TOOL_SRCS:tests/%.c=$(OUT)/tests/%.d) \
         $(BENCH_SRCS:bench/%.c=$(OUT)/benchobj/%.d)
