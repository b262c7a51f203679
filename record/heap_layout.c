/*
 * heap_layout.c - where `luaprof heap` (heap.h) reads a LuaJIT VM's
 * fields: the offsets of global_State, lua_State and every GC object
 * struct for the build in the target, from the recorder's layout of it
 * (struct lj_layout: from DWARF, or derived from a stripped build's code)
 * and what is the same in every LuaJIT 2.1 of one reference width; and
 * the VM itself in a copy of the target's memory: its global_State,
 * found as the lua_State at the head of a GG_State, and its vmstate.
 * The recorder finds a running VM's G the same way at attach, before any
 * sample shows it (heap_find_G(), heap_is_G()).
 * tests/e2e/heap_builds.sh holds every offset to each build's DWARF.
 */
#include <errno.h>
#include <string.h>

#include "record/heap.h"
#include "record/luajit.h" /* target_read() */

static uint32_t align8(uint32_t v)
{
	return (v + 7) & ~7u;
}

/* ---- layout ------------------------------------------------------------ */

/* The global_State fields the recorder's layout does not name, placed
 * from those it does: builds from 2.1.0-beta3+git2022 on keep strings in
 * g->str (StrInternState) right before vmstate, which then sits one
 * reference before mainthref; older ones start with g->strhash. */
static void global_fields(const struct lj_layout *lo, struct heap_layout *hl)
{
	unsigned R = hl->ref;
	int newstr = (unsigned)(lo->g_mainthref - lo->g_vmstate) == R;
	uint32_t gc = newstr ? 16 : 32; /* after allocf, allocd (and strhash) */

	hl->g_total = gc;
	hl->g_state = gc + (hl->gc64 ? 17 : 9);
	hl->g_root = gc + (hl->gc64 ? 24 : 16);
	hl->g_strtab = newstr ? lo->g_vmstate - 32u : 0;
	hl->g_strmask = hl->g_strtab + 8;
	hl->g_vmstate = lo->g_vmstate;
	hl->g_mainth = lo->g_mainthref;
	/* new: tmpbuf (32), tmptv, tmptv2, nilnode (24) in between */
	hl->g_registry = newstr ? lo->g_mainthref + R + 72 : align8(lo->g_mainthref + R);
	/* after cur_L, jit_base, ctype_state (and the new ones' PRNG) */
	hl->g_gcroot = newstr ? align8(lo->g_jit_base + 2 * R) + 32 : lo->g_jit_base + 2 * R;
	hl->ngcroot = 38; /* GCROOT_MAX of the oldest; later ones add one */
	hl->g_ctype_state = lo->g_jit_base + R;
}

/* The GC object structs, the same in every 2.1 of one reference width:
 * a header of nextgc, marked, gct and two bytes, then aligned fields. */
static void object_fields(const struct lj_layout *lo, struct heap_layout *hl)
{
	unsigned R = hl->ref;
	int newstr;

	hl->t_colo = R + 3;
	hl->t_array = 2 * R;
	hl->t_meta = 4 * R;
	hl->t_node = 5 * R;
	hl->t_asize = 6 * R;
	hl->t_hmask = 6 * R + 4;
	hl->t_size = hl->gc64 ? 64 : 32; /* GC64's has freetop */
	hl->node_size = 24;
	hl->u_env = 2 * R;
	hl->u_len = 3 * R;
	hl->u_meta = 4 * R;
	hl->u_size = align8(5 * R + 4);
	hl->f_ffid = lo->fn_ffid;
	hl->f_nupv = lo->fn_ffid + 1;
	hl->f_env = 2 * R;
	hl->f_pc = lo->fn_pc;
	hl->f_uvptr = lo->fn_pc + R;
	hl->f_cupv = lo->fn_upvalue;
	hl->uv_v = 2 * R + (2 * R > 8 ? 2 * R : 8);
	hl->uv_size = align8(hl->uv_v + R + 4);
	hl->s_len = lo->str_len;
	hl->s_size = lo->str_size;
	hl->pt_size = lo->pt_size;
	hl->pt_sizept = lo->pt_sizept;
	hl->pt_k = lo->pt_k;
	hl->pt_sizekgc = lo->pt_sizekgc;
	hl->pt_chunkname = lo->pt_chunkname;
	hl->pt_firstline = lo->pt_firstline;
	hl->pt_uvinfo = lo->pt_uvinfo;
	hl->pt_sizeuv = lo->pt_sizeuv;
	hl->cd_size = align8(R + 4);
	hl->ct_size = hl->gc64 ? 24 : 16; /* info, size, sib, next, name */
	hl->g2j = lo->g2j;
	hl->j_trace = lo->j_trace;
	hl->j_sizetrace = lo->j_sizetrace;
	hl->tr_size = hl->gc64 ? 120 : 96;
	hl->tr_nins = hl->gc64 ? 12 : 8;
	hl->tr_nk = hl->gc64 ? 40 : 24;
	hl->tr_startpt = hl->gc64 ? 64 : 48;
	/* With the new string interning, SnapShot grew from 8 to 12 bytes
	 * and GCtrace's nsnap moved into the header, nsnapmap to 32 bits. */
	newstr = (unsigned)(lo->g_mainthref - lo->g_vmstate) == hl->ref;
	hl->tr_nsnap = newstr ? hl->ref + 2 : hl->tr_nk + 4;
	hl->tr_nsnapmap = hl->tr_nk + (newstr ? 4 : 6);
	hl->tr_snapmap32 = newstr;
	hl->sn_size = newstr ? 12 : 8;
}

int heap_layout_from(const struct lj_layout *lo, struct heap_layout *hl)
{
	memset(hl, 0, sizeof(*hl));
	hl->gc64 = !!(lo->flags & LJ_LAYOUT_GC64);
	hl->ref = lo->ref_size;
	if (hl->ref != (hl->gc64 ? 8u : 4u) || lo->g_vmstate < 40 || lo->g_jit_base < 64)
		return -EINVAL;
	hl->gg_g = lo->gg_g;
	hl->l_glref = lo->l_glref;
	hl->l_stack = lo->l_stack;
	hl->l_top = lo->l_top;
	hl->l_env = lo->l_stack + 2 * hl->ref; /* after openupval */
	hl->l_stacksize = lo->l_cframe + 8;
	hl->l_size = align8(hl->l_stacksize + 4) +
		     (lo->flags & LJ_LAYOUT_OPENRESTY ? 16 : 0); /* exdata, exdata2 */
	global_fields(lo, hl);
	object_fields(lo, hl);
	return 0;
}

/* ---- the VM ------------------------------------------------------------ */

/* Whether a lua_State at L heads a GG_State: glref is G right after it
 * and G's mainthref is L. */
static int is_main_thread(const struct heap_image *im, const struct heap_layout *hl, uint64_t L)
{
	const uint8_t *p = heap_ptr(im, L + hl->l_glref, hl->ref), *q;
	uint64_t G = L + hl->gg_g;

	if (!p || get_ref(hl, p) != G)
		return 0;
	q = heap_ptr(im, G + hl->g_mainth, hl->ref);
	return q && get_ref(hl, q) == L && gct_of(im, hl, L) == HT_THREAD;
}

int heap_find_vm(const struct heap_image *im, const struct heap_layout *hl, unsigned which,
		 uint64_t *L, uint64_t *G, unsigned *nvm)
{
	*nvm = 0;
	for (size_t i = 0; i < im->n; i++) {
		const struct heap_region *r = &im->r[i];

		for (uint64_t a = (r->start + 7) & ~7ull; a + hl->l_glref + 8 <= r->end; a += 8) {
			/* The cheap test first: glref == a + gg_g. */
			const uint8_t *p = r->data + (a - r->start) + hl->l_glref;

			if (get_ref(hl, p) != a + hl->gg_g || !is_main_thread(im, hl, a))
				continue;
			if (++*nvm == which) {
				*L = a;
				*G = a + hl->gg_g;
			}
		}
	}
	return *nvm >= which && which ? 0 : -ENOENT;
}

int heap_find_G(pid_t pid, const struct lj_layout *lo, uint64_t *G)
{
	struct heap_image im = { 0 };
	struct heap_layout hl;
	uint64_t L;
	unsigned nvm = 0;
	int err = heap_layout_from(lo, &hl);

	if (!err)
		err = heap_image_copy(&im, pid, HEAP_FIND_G_BYTES);
	if (!err)
		err = heap_find_vm(&im, &hl, 1, &L, G, &nvm);
	heap_image_free(&im);
	return err ? err : nvm == 1 ? 0 : -EEXIST;
}

int heap_is_G(pid_t pid, const struct lj_layout *lo, uint64_t G)
{
	uint8_t head[1024]; /* from L to past G's mainthref, read at once */
	struct heap_image im = { 0 };
	struct heap_layout hl;
	uint64_t L = G - lo->gg_g;
	size_t len = (size_t)lo->gg_g + lo->g_mainthref + 8;
	int is;

	if (G <= lo->gg_g || len > sizeof(head) || heap_layout_from(lo, &hl) ||
	    target_read(pid, L, head, len) || heap_image_add(&im, L, head, len))
		return 0;
	is = is_main_thread(&im, &hl, L);
	heap_image_free(&im);
	return is;
}

int heap_vmstate(const struct heap_image *im, const struct heap_layout *hl, uint64_t G,
		 int32_t *vmstate)
{
	const uint8_t *p = heap_ptr(im, G + hl->g_vmstate, 4);

	if (!p)
		return -EFAULT;
	*vmstate = (int32_t)le32(p);
	return 0;
}
