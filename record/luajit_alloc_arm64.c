/*
 * luajit_alloc_arm64.c - where to probe a LuaJIT VM's allocator on arm64
 * (see luajit_alloc.h): read from its machine code, whatever build.
 *
 * g->allocf is lua_Alloc(ud, ptr, osize, nsize): x0, x1, x2, x3.
 * Built-in (lj_alloc_f), it is a three-way dispatch; bookworm's luajit2,
 * gcc -O2:
 *
 *   mov x2, x3
 *   cbz x2, free          <- the site: a branch, ud, ptr and nsize intact
 *   cbz x1, malloc
 *   b   lj_alloc_realloc
 *   malloc: mov x1, x2 ; b lj_alloc_malloc
 *   free:   b   lj_alloc_free
 *
 * The site is the first instruction, in straight-line order from the
 * entry, that the kernel's uprobes simulate in place (a branch: one trap;
 * any other is copied out of line and single-stepped, a second trap) and
 * before which nothing wrote x0, x1 or x3; else the entry, stepped unless
 * it is a branch or a hint (bti c, paciasp: arch/arm64/kernel/probes/
 * decode-insn.c).  A call (bl, blr) leaves the return address in x30,
 * which a tail call (b) keeps: a return probe on allocf itself sees every
 * block it returns, whatever it tail-calls, so the return site is allocf
 * (ret_self) on any build.
 */
#include <errno.h>
#include <string.h>

#include <capstone/capstone.h>

#include "record/luajit_alloc.h"

/* Whether the kernel's uprobes run instruction insn without a step. */
static int simulated(uint32_t insn)
{
	return (insn & 0x7c000000) == 0x14000000 || /* b, bl */
	       (insn & 0xff000010) == 0x54000000 || /* b.cond */
	       (insn & 0x7e000000) == 0x34000000 || /* cbz, cbnz */
	       (insn & 0x7e000000) == 0x36000000 || /* tbz, tbnz */
	       (insn & 0xff9ffc1f) == 0xd61f0000 || /* br, blr, ret */
	       (insn & 0xfffff01f) == 0xd503201f;   /* hint: nop, bti, paciasp */
}

/* Whether in writes one of the arguments the probe reads. */
static int writes_arg(csh cs, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (cs_regs_access(cs, in, rd, &nrd, wr, &nwr))
		return 1;
	for (int i = 0; i < nwr; i++)
		switch (wr[i]) {
		case ARM64_REG_X0: case ARM64_REG_W0:
		case ARM64_REG_X1: case ARM64_REG_W1:
		case ARM64_REG_X3: case ARM64_REG_W3:
			return 1;
		}
	return 0;
}

/* The first branch from the entry with the arguments intact: 0, or
 * -ENOENT. */
static int find_site(csh cs, cs_insn *in, const uint8_t *code, size_t len,
		     uint64_t addr, uint64_t *site)
{
	for (int i = 0; i < 32 && cs_disasm_iter(cs, &code, &len, &addr, in); i++) {
		if (cs_insn_group(cs, in, CS_GRP_JUMP) || cs_insn_group(cs, in, CS_GRP_CALL)) {
			*site = in->address;
			return 0;
		}
		if (cs_insn_group(cs, in, CS_GRP_RET) || writes_arg(cs, in))
			break;
	}
	return -ENOENT;
}

int lj_alloc_sites_arm64(const uint8_t *code, size_t len, uint64_t addr,
			 struct lj_alloc_sites *out)
{
	uint32_t insn;
	cs_insn *in;
	csh cs;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(insn) || (addr & 3))
		return -EINVAL;
	if (cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(cs);
	if (!in || find_site(cs, in, code, len, addr, &out->site)) {
		memcpy(&insn, code, sizeof(insn)); /* little-endian, as arm64 Linux */
		out->site = addr;
		out->site_stepped = !simulated(insn);
	}
	out->ret_self = 1;
	if (in)
		cs_free(in, 1);
	cs_close(&cs);
	return 0;
}
