/*
 * symexec_decoder.h - what every instruction-set backend of symexec.c
 * needs from capstone: a decoder with operand details on, one instruction
 * buffer, and a cache of the backend's own decoded form of each
 * instruction by address, since a walk visits most instructions twice
 * and a sweep reads the interpreter's once per fixed register.
 *
 * The cache is open addressing over SX_DECODED slots of the backend's
 * size, the first 8 bytes of a slot its instruction's address (0: empty);
 * past three quarters full, or after 32 probes, an instruction is decoded
 * into a slot of its own that the next miss reuses.
 */
#ifndef LUAPROF_RECORD_SYMEXEC_DECODER_H
#define LUAPROF_RECORD_SYMEXEC_DECODER_H

#include <capstone/capstone.h>
#include <stddef.h>
#include <stdint.h>

struct sx_ctx;

#define SX_DECODED (1u << 14)

struct sx_decoder {
	csh cs;
	cs_insn *insn;
	unsigned char *cache; /* SX_DECODED slots of size bytes */
	unsigned char *tmp;   /* one more, when the cache is full */
	size_t size;
	unsigned used;
};

/* Decodes the instruction at pc into slot, the backend's form: 0 or
 * -errno.  h is the backend's handle. */
typedef int (*sx_decode_fn)(struct sx_ctx *c, void *h, uint64_t pc, void *slot);

/* A decoder whose cache holds slots of size bytes; NULL if capstone or
 * memory failed.  A backend's handle: sx_decoder_free() is its close. */
struct sx_decoder *sx_decoder_new(cs_arch arch, cs_mode mode, size_t size);
void sx_decoder_free(void *d);

/* The decoded instruction at pc, from the cache or decoded now; NULL if
 * it does not decode. */
const void *sx_decoder_fetch(struct sx_decoder *d, struct sx_ctx *c, uint64_t pc,
			     sx_decode_fn decode, void *h);

#endif
