/*
 * vmstate.c - counts samples by LuaJIT VM state, overall and per Lua
 * function, and prints them (see vmstate.h).  The function is a sample's
 * innermost Lua function, named as in stacks, so the table reads like
 * jit.p's `v` mode split by function: which functions run compiled,
 * which stay in the interpreter, which spend their time in C or the GC.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "report/vmstate.h"

#define NO_FUNCTION UINT32_MAX

static const struct {
	char letter;
	const char *name;
} classes[VMC_MAX] = {
	[VMC_COMPILED] = { 'N', "Compiled" },
	[VMC_INTERPRETED] = { 'I', "Interpreted" },
	[VMC_C] = { 'C', "C code" },
	[VMC_GC] = { 'G', "Garbage Collector" },
	[VMC_JIT] = { 'J', "JIT Compiler" },
	[VMC_HOST] = { '-', "Host code (no Lua running)" },
	[VMC_UNKNOWN] = { '?', "VM state unreadable" },
	[VMC_NATIVE] = { ' ', "Not a LuaJIT process" },
};

struct fn_ent {
	uint32_t name; /* a name id, or NO_FUNCTION */
	uint64_t c[VMC_MAX], total;
};

struct vmstate {
	struct lua *lua;
	uint64_t c[VMC_MAX], total;
	struct fn_ent *fns;
	size_t nfns, capfns;
	struct htab fns_h;
};

int vmstate_new(struct vmstate **out, struct lua *lua)
{
	struct vmstate *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->lua = lua;
	*out = v;
	return 0;
}

void vmstate_free(struct vmstate *v)
{
	if (!v)
		return;
	free(v->fns);
	htab_free(&v->fns_h);
	free(v);
}

enum vm_class vmstate_class(const struct lp_sample *smp)
{
	switch (smp->lua_state) {
	case LP_LUA_NONE:
		return VMC_NATIVE;
	case LP_LUA_IDLE:
		/* The host's own lua_gc(), say, runs the collector with no
		 * Lua frame: the GC's time all the same. */
		return ~smp->vmstate == 2 ? VMC_GC : VMC_HOST;
	case LP_LUA_NO_G:
	case LP_LUA_BAD_L:
		return VMC_UNKNOWN;
	}
	if (smp->vmstate >= 0)
		return VMC_COMPILED;
	switch (~smp->vmstate) {
	case 0:
		return VMC_INTERPRETED;
	case 1:
		return VMC_C;
	case 2:
		return VMC_GC;
	case 3: case 4: case 5: case 6:
		return VMC_JIT;
	}
	return VMC_UNKNOWN;
}

const char *vmstate_class_name(enum vm_class c)
{
	return c < VMC_MAX ? classes[c].name : "?";
}

int vmstate_add(struct vmstate *v, const struct lp_sample *smp, uint32_t lidx)
{
	enum vm_class c = vmstate_class(smp);
	uint32_t name = NO_FUNCTION;
	struct htab_probe p;
	struct fn_ent *f;
	int64_t i;
	int err;

	v->c[c]++;
	v->total++;
	if (lidx != UINT32_MAX) {
		err = lua_leaf_function(v->lua, smp->pid, lidx, &name);
		if (err)
			return err;
	}
	htab_probe_start(&v->fns_h, hash_u64(name), &p);
	while ((i = htab_probe_next(&v->fns_h, &p)) >= 0) {
		if (v->fns[i].name == name) {
			v->fns[i].c[c]++;
			v->fns[i].total++;
			return 0;
		}
	}
	err = GROW(v->fns, v->capfns, v->nfns + 1);
	if (!err)
		err = htab_insert(&v->fns_h, hash_u64(name), v->nfns);
	if (err)
		return err;
	f = &v->fns[v->nfns++];
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->c[c] = 1;
	f->total = 1;
	return 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn_ent *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

int out_vmstate(FILE *out, const struct profile *p, const struct vmstate *v,
		unsigned rows)
{
	struct fn_ent *fns;
	size_t n = v->nfns, shown = 0;

	profile_header(out, p, "vmstate");
	fprintf(out, "# VM state of each sample (jit.p's letters)\n");
	for (int c = 0; c < VMC_MAX; c++)
		if (v->c[c])
			fprintf(out, "%6.2f%%  %c  %-28s %" PRIu64 "\n",
				100.0 * v->c[c] / v->total, classes[c].letter,
				classes[c].name, v->c[c]);
	fns = malloc((n ? n : 1) * sizeof(*fns));
	if (!fns)
		return -ENOMEM;
	if (n) { /* v->fns is NULL without samples: memcpy(, NULL, 0) is UB */
		memcpy(fns, v->fns, n * sizeof(*fns));
		qsort(fns, n, sizeof(*fns), fn_cmp);
	}
	fprintf(out, "\n# by innermost Lua function: samples, then %% of them per state\n");
	fprintf(out, "   samples       N       I       C       G       J  function\n");
	for (size_t i = 0; i < n && (!rows || shown < rows); i++) {
		const struct fn_ent *f = &fns[i];

		if (f->name == NO_FUNCTION)
			continue; /* no Lua: the overall table says what it was */
		fprintf(out, "%10" PRIu64, f->total);
		for (int c = VMC_COMPILED; c <= VMC_JIT; c++)
			fprintf(out, " %6.1f%%", 100.0 * f->c[c] / f->total);
		fprintf(out, "  %s\n", strtab_get(&p->names, f->name));
		shown++;
	}
	free(fns);
	return 0;
}
