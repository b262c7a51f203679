/*
 * luajit_protos.c - keeps the Lua records of a trace and names Lua stacks
 * (see luajit_protos.h; the report's side of record/luajit_protos.c).  Prototypes and Lua stacks are defined once and named by id for
 * the rest of the trace, so they are copied out of the reader's buffers
 * and kept; a process's VM record may be replaced (exec, a new VM).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/lua_bc.h"
#include "report/luajit_protos_priv.h"

/* The functions a marked frame's name lists, at most. */
#define LUA_INLINED_NAMED 8

int lua_new(struct lua **out, struct frames *fr, int current_lines)
{
	struct lua *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->fr = fr;
	l->current_lines = current_lines;
	*out = l;
	return 0;
}

static void free_proto(struct lp_proto *p)
{
	if (!p)
		return;
	free((void *)p->chunkname);
	free((void *)p->bc);
	free((void *)p->lines);
	for (uint32_t i = 0; i < p->nkstr; i++)
		free((void *)p->kstr[i].str);
	free((void *)p->kstr);
	for (uint32_t i = 0; i < p->nuv; i++)
		free((void *)p->uvnames[i]);
	free((void *)p->uvnames);
	free((void *)p->varinfo);
	free(p);
}

/* A trace's snapshots, as lua_add_trace_snaps() (lua_place.c) kept them. */
static void free_snaps(struct snap_set *ss)
{
	if (!ss)
		return;
	free(ss->snaps);
	free(ss->frames);
	free(ss);
}

void lua_free(struct lua *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nvms; i++) {
		for (uint32_t j = 0; j < l->vms[i].nff; j++)
			free(l->vms[i].ffnames[j]);
		free(l->vms[i].ffnames);
	}
	free(l->vms);
	for (size_t i = 0; i < l->nprotos; i++)
		free_proto(l->protos[i]);
	free(l->protos);
	htab_free(&l->protos_h);
	for (size_t i = 0; i < l->nstacks; i++)
		free(l->stacks[i].frames);
	free(l->stacks);
	htab_free(&l->stacks_h);
	for (size_t i = 0; i < l->ntraces; i++)
		free_snaps(l->traces[i].snaps);
	free(l->traces);
	htab_free(&l->traces_h);
	free(l->fnames);
	htab_free(&l->fnames_h);
	free(l->names);
	htab_free(&l->names_h);
	free(l->places); /* lua_place.c's placements */
	htab_free(&l->places_h);
	free(l);
}

static struct vm_ent *find_vm(const struct lua *l, uint32_t pid)
{
	/* Few processes: the latest record of pid wins. */
	for (size_t i = l->nvms; i-- > 0;)
		if (l->vms[i].pid == pid)
			return &l->vms[i];
	return NULL;
}

uint32_t lua_vm_id(const struct lua *l, uint32_t pid)
{
	const struct vm_ent *v = find_vm(l, pid);

	return v ? (uint32_t)(v - l->vms) : UINT32_MAX;
}

int lua_add_luajit(struct lua *l, const struct lp_luajit *rec)
{
	struct vm_ent *v;
	int err = GROW(l->vms, l->capvms, l->nvms + 1);

	if (err)
		return err;
	v = &l->vms[l->nvms];
	memset(v, 0, sizeof(*v));
	v->pid = rec->pid;
	v->vm_start = rec->vm_start;
	v->vm_end = rec->vm_end;
	v->flags = rec->flags;
	v->ffnames = calloc(rec->nff + 1, sizeof(*v->ffnames));
	if (!v->ffnames)
		return -ENOMEM;
	for (uint32_t i = 0; i < rec->nff; i++) {
		v->ffnames[i] = strdup(rec->ffnames[i]);
		if (!v->ffnames[i])
			return -ENOMEM;
		v->nff = i + 1;
	}
	l->nvms++;
	return 0;
}

static void *dup_mem(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

static const struct lp_proto *find_proto(const struct lua *l, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&l->protos_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&l->protos_h, &p)) >= 0)
		if (l->protos[i]->id == id)
			return l->protos[i];
	return NULL;
}

int lua_add_proto(struct lua *l, const struct lp_proto *rec)
{
	struct lp_proto *p;
	struct lp_proto_kstr *ks;
	uint32_t *bc;
	char **uv;
	int err;

	if (!rec->id || find_proto(l, rec->id))
		return 0;
	err = GROW(l->protos, l->capprotos, l->nprotos + 1);
	if (err)
		return err;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = *rec;
	p->nkstr = p->nuv = 0;
	p->kstr = NULL;
	p->uvnames = NULL;
	p->chunkname = strdup(rec->chunkname);
	p->bc = bc = dup_mem(rec->bc, rec->nbc * sizeof(*rec->bc));
	p->lines = dup_mem(rec->lines, rec->nbc * sizeof(*rec->lines));
	p->varinfo = dup_mem(rec->varinfo, rec->varinfo_len);
	ks = calloc(rec->nkstr + 1, sizeof(*ks));
	uv = calloc(rec->nuv + 1, sizeof(*uv));
	p->kstr = ks;
	p->uvnames = (const char *const *)uv;
	if (!p->chunkname || !p->bc || !p->lines || !p->varinfo || !ks || !uv)
		goto nomem;
	if (p->nbc) /* in the numbering lua_names.c reads */
		lua_bc_norm(bc, p->nbc, lua_bc_numbering(bc[0]));
	for (uint32_t i = 0; i < rec->nkstr; i++, p->nkstr++) {
		ks[i].index = rec->kstr[i].index;
		ks[i].str = strdup(rec->kstr[i].str);
		if (!ks[i].str)
			goto nomem;
	}
	for (uint32_t i = 0; i < rec->nuv; i++, p->nuv++) {
		uv[i] = strdup(rec->uvnames[i]);
		if (!uv[i])
			goto nomem;
	}
	err = htab_insert(&l->protos_h, hash_u64(p->id), l->nprotos);
	if (err) {
		free_proto(p);
		return err;
	}
	l->protos[l->nprotos++] = p;
	return 0;
nomem:
	free_proto(p);
	return -ENOMEM;
}

const struct lp_proto *lua_proto(const struct lua *l, uint64_t id)
{
	return find_proto(l, id);
}

int64_t lua_trace_index(const struct lua *l, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&l->traces_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&l->traces_h, &p)) >= 0)
		if (l->traces[i].id == id)
			return i;
	return -1;
}

static const struct trace_ent *find_trace(const struct lua *l, uint64_t id)
{
	int64_t i = lua_trace_index(l, id);

	return i < 0 ? NULL : &l->traces[i];
}

int lua_add_trace(struct lua *l, const struct lp_trace *rec)
{
	int err;

	if (!rec->id || find_trace(l, rec->id))
		return 0;
	err = GROW(l->traces, l->captraces, l->ntraces + 1);
	if (!err)
		err = htab_insert(&l->traces_h, hash_u64(rec->id), l->ntraces);
	if (err)
		return err;
	memset(&l->traces[l->ntraces], 0, sizeof(l->traces[0]));
	l->traces[l->ntraces].id = rec->id;
	l->traces[l->ntraces].pid = rec->pid;
	l->traces[l->ntraces].proto = rec->proto;
	l->traces[l->ntraces].startpc = rec->startpc;
	l->traces[l->ntraces].mcode = rec->mcode;
	l->traces[l->ntraces].szmcode = rec->szmcode;
	l->ntraces++;
	return 0;
}

/* The frame name id of name record id, or UINT32_MAX. */
static uint32_t find_name(const struct lua *l, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&l->names_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&l->names_h, &p)) >= 0)
		if (l->names[i].id == id)
			return l->names[i].frame;
	return UINT32_MAX;
}

int lua_add_name(struct lua *l, const struct lp_name *rec)
{
	uint32_t frame;
	int err;

	if (!rec->id || find_name(l, rec->id) != UINT32_MAX)
		return 0; /* the first record of an id stands */
	err = frames_name(l->fr, rec->text[0] ? rec->text : "[?]", &frame) ?:
	      GROW(l->names, l->capnames, l->nnames + 1);
	if (!err)
		err = htab_insert(&l->names_h, hash_u64(rec->id), l->nnames);
	if (err)
		return err;
	l->names[l->nnames++] = (struct name_ent){ rec->id, frame };
	return 0;
}

int64_t lua_trace_holding(const struct lua *l, uint32_t pid, uint64_t addr)
{
	/* The latest first: a trace's code is reused once it is flushed. */
	for (size_t i = l->ntraces; i-- > 0;) {
		const struct trace_ent *t = &l->traces[i];

		if (t->pid == pid && addr >= t->mcode && addr - t->mcode < t->szmcode)
			return (int64_t)i;
	}
	return -1;
}

uint32_t lua_find_stack(const struct lua *l, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&l->stacks_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&l->stacks_h, &p)) >= 0)
		if (l->stacks[i].id == id)
			return (uint32_t)i;
	return UINT32_MAX;
}

int lua_push_stack(struct lua *l, const struct lp_lframe *frames, uint32_t depth,
		   uint32_t *idx)
{
	struct lstack_ent *e;
	int err = GROW(l->stacks, l->capstacks, l->nstacks + 1);

	if (err)
		return err;
	e = &l->stacks[l->nstacks];
	e->id = 0;
	e->depth = depth;
	e->leaf_vm = 0;
	e->frames = dup_mem(frames, depth * sizeof(*frames));
	if (!e->frames)
		return -ENOMEM;
	*idx = (uint32_t)l->nstacks++;
	return 0;
}

int lua_add_stack(struct lua *l, const struct lp_lua_stack *rec)
{
	uint32_t idx;
	int err;

	if (!rec->id || lua_find_stack(l, rec->id) != UINT32_MAX)
		return 0;
	err = lua_push_stack(l, rec->frames, rec->depth, &idx);
	if (!err)
		err = htab_insert(&l->stacks_h, hash_u64(rec->id), idx);
	if (!err)
		l->stacks[idx].id = rec->id;
	return err;
}

int lua_stack_in_trace(const struct lua *l, uint32_t idx)
{
	return idx < l->nstacks && l->stacks[idx].depth &&
	       l->stacks[idx].frames[0].kind == LP_LFRAME_TRACE;
}

int lua_stack_builtin_code(const struct lua *l, uint32_t idx)
{
	const struct lp_lframe *f = idx < l->nstacks && l->stacks[idx].depth ?
				    &l->stacks[idx].frames[0] : NULL;

	return f && (f->kind == LP_LFRAME_FF || f->kind == LP_LFRAME_C) && f->pc == 1;
}

int lua_stack_cut(const struct lua *l, uint32_t idx)
{
	return idx < l->nstacks && l->stacks[idx].depth &&
	       l->stacks[idx].frames[l->stacks[idx].depth - 1].kind == LP_LFRAME_TRUNC;
}

uint32_t lua_stack_depth(const struct lua *l, uint32_t idx)
{
	return idx < l->nstacks ? l->stacks[idx].depth : 0;
}

int lua_vm_range(const struct lua *l, uint32_t pid, uint64_t *start, uint64_t *end)
{
	const struct vm_ent *v = find_vm(l, pid);

	if (!v || !v->vm_end)
		return -ENOENT;
	*start = v->vm_start;
	*end = v->vm_end;
	return 0;
}

/* LuaJIT's LUA_IDSIZE: what its tracebacks give a chunk's name. */
#define LJ_IDSIZE 60

const char *lua_chunk_label(const char *chunkname, char *buf, size_t len)
{
	size_t n;

	if (chunkname[0] == '@')
		return chunkname + 1;
	if (chunkname[0] == '=')
		return chunkname;
	/* The text up to its first control character, at most 47 bytes;
	 * longer, or followed by more lines, it is cut to 45 and "...". */
	for (n = 0; n < LJ_IDSIZE - 12; n++)
		if ((unsigned char)chunkname[n] < ' ')
			break;
	if (chunkname[n] != '\0') {
		if (n > LJ_IDSIZE - 15)
			n = LJ_IDSIZE - 15;
		snprintf(buf, len, "[string \"%.*s...\"]", (int)n, chunkname);
	} else {
		snprintf(buf, len, "[string \"%.*s\"]", (int)n, chunkname);
	}
	return buf;
}

/* The name of a Lua function frame as LuaJIT's tracebacks give it: main
 * for a chunk, from the caller's call site otherwise, "?" when none. */
/* A frame its Lua caller's instruction called: a Lua call, or a vararg
 * function's (LuaJIT moves its frame up past its arguments, linked VARG,
 * above the one the call made, which the walk and the snapshots skip:
 * the frame below is the caller's, at the call). */
static int called_from_lua(const struct lp_lframe *f, const struct lp_lframe *caller)
{
	return (f->link == LP_LFRAME_LINK_LUA || f->link == LP_LFRAME_LINK_VARG) && caller &&
	       caller->kind == LP_LFRAME_LUA;
}

static void func_name(struct lua *l, const struct vm_ent *vm,
		      const struct lp_proto *pt, const struct lp_lframe *f,
		      const struct lp_lframe *caller, char *name, size_t len)
{
	snprintf(name, len, "?");
	if (pt->firstline == 0) {
		snprintf(name, len, "main");
	} else if (called_from_lua(f, caller)) {
		if (!lua_call_name(find_proto(l, caller->value), caller->pc,
				   vm && (vm->flags & LP_LUAJIT_GC64), name, len))
			snprintf(name, len, "?");
	}
}

/* The line a frame runs: that of the instruction before its pc, or, in
 * the function a compiled trace starts in, where the trace starts, when
 * no snapshot placed the sample (the pc the walker finds for a trace's
 * base frame is the interpreter's, from before the trace ran).  0 when
 * unknown. */
static uint32_t frame_line(const struct lp_proto *pt, const struct lp_lframe *f,
			   const struct trace_ent *trace)
{
	if (trace && trace->proto == f->value && trace->startpc < pt->nbc)
		return pt->lines[trace->startpc];
	if (f->pc > 0 && f->pc <= pt->nbc)
		return pt->lines[f->pc - 1];
	return 0;
}

/* The trace a Lua stack's TRACE frame f names, unless the stack was
 * placed by the trace's snapshots (lua_place.c), whose frames have pcs. */
static const struct trace_ent *unplaced_trace(const struct lua *l, const struct lp_lframe *f)
{
	return f->pc && f->link != LUA_PLACED_MARK ? find_trace(l, f->pc) : NULL;
}

/* trace: the compiled trace running in this (leaf) frame, or NULL;
 * inl: " [inlined: ...]" for a frame marked with the functions whose
 * code it may be running, or NULL. */
static int name_lua_frame_now(struct lua *l, const struct vm_ent *vm,
			      const struct lp_lframe *f, const struct lp_lframe *caller,
			      const struct trace_ent *trace, const char *inl, uint32_t *id)
{
	const struct lp_proto *pt = find_proto(l, f->value);
	struct frame_info fi = { .kind = FRAME_LUA, .func = FRAMEINFO_NONE,
				 .file = FRAMEINFO_NONE, .mapping = FRAMEINFO_NONE };
	char name[256], text[768], label[LUA_CHUNK_LABEL_MAX];
	const char *chunk;
	int err = 0;

	if (!pt)
		return frames_name_as(l->fr, "[unknown Lua function]", &fi, id);
	if (pt->firstline == UINT32_MAX) { /* a bytecode builtin */
		fi.kind = FRAME_BUILTIN;
		snprintf(text, sizeof(text), "[builtin:%s]", pt->chunkname);
		return frames_name_as(l->fr, text, &fi, id);
	}
	func_name(l, vm, pt, f, caller, name, sizeof(name));
	if (inl) {
		size_t at = strlen(name);

		snprintf(name + at, sizeof(name) - at, "%s", inl);
	}
	chunk = lua_chunk_label(pt->chunkname, label, sizeof(label));
	fi.start_line = pt->firstline;
	if (l->current_lines || frames_describing(l->fr))
		fi.line = frame_line(pt, f, trace);
	snprintf(text, sizeof(text), "%s (%s:%u)", name, chunk, pt->firstline);
	if (frames_describing(l->fr)) {
		err = frames_name(l->fr, chunk, &fi.file);
		/* The frame without --lines is the function's, whatever
		 * line runs. */
		if (!err && l->current_lines && fi.line)
			err = frames_name(l->fr, text, &fi.func);
	}
	if (l->current_lines && fi.line)
		snprintf(text, sizeof(text), "%s (%s:%u)", name, chunk, fi.line);
	return err ?: frames_name_as(l->fr, text, &fi, id);
}

/* name_lua_frame_now(), once per fname_ent key: what it reads of its
 * arguments, and nothing else, makes the key. */
static int name_lua_frame(struct lua *l, const struct vm_ent *vm,
			  const struct lp_lframe *f, const struct lp_lframe *caller,
			  const struct trace_ent *trace, uint32_t *id)
{
	struct fname_ent k = { .pt = find_proto(l, f->value), .pc = f->pc };
	struct htab_probe p;
	uint64_t hash;
	int64_t i;
	int err;

	if (!k.pt)
		return name_lua_frame_now(l, vm, f, caller, trace, NULL, id);
	if (called_from_lua(f, caller)) {
		k.caller = find_proto(l, caller->value);
		k.caller_pc = caller->pc;
		if (!k.caller)
			k.caller_pc = UINT32_MAX; /* a caller not known */
	}
	if (trace) {
		k.trace_proto = trace->proto;
		k.trace_pc = trace->startpc + 1;
	}
	k.gc64 = vm && (vm->flags & LP_LUAJIT_GC64);
	hash = hash_mix(hash_mix(hash_mix(hash_mix(hash_mix(hash_u64((uintptr_t)k.pt),
		(uintptr_t)k.caller), (uint64_t)k.caller_pc << 32 | k.pc), k.trace_proto),
		k.trace_pc), k.gc64);
	htab_probe_start(&l->fnames_h, hash, &p);
	while ((i = htab_probe_next(&l->fnames_h, &p)) >= 0) {
		const struct fname_ent *e = &l->fnames[i];

		if (e->pt == k.pt && e->caller == k.caller && e->caller_pc == k.caller_pc &&
		    e->pc == k.pc && e->trace_proto == k.trace_proto &&
		    e->trace_pc == k.trace_pc && e->gc64 == k.gc64) {
			*id = e->id;
			return 0;
		}
	}
	err = name_lua_frame_now(l, vm, f, caller, trace, NULL, id) ?:
	      GROW(l->fnames, l->capfnames, l->nfnames + 1) ?:
	      htab_insert(&l->fnames_h, hash, l->nfnames);
	if (err)
		return err;
	k.id = *id;
	l->fnames[l->nfnames++] = k;
	return 0;
}

uint32_t lua_stack_lines(struct lua *l, uint32_t pid, uint32_t idx,
			 struct lua_line_frame *out, uint32_t cap)
{
	const struct vm_ent *vm = find_vm(l, pid);
	const struct trace_ent *trace = NULL;
	const struct lstack_ent *e;
	uint32_t n = 0;

	if (idx >= l->nstacks)
		return 0;
	e = &l->stacks[idx];
	for (uint32_t i = 0; i < e->depth && n < cap; i++) {
		const struct lp_lframe *f = &e->frames[i];
		const struct lp_proto *pt;

		if (f->kind == LP_LFRAME_TRACE)
			trace = unplaced_trace(l, f);
		if (f->kind != LP_LFRAME_LUA)
			continue;
		pt = find_proto(l, f->value);
		if (pt && pt->firstline != UINT32_MAX) {
			out[n].pt = pt;
			out[n].line = frame_line(pt, f, trace);
			func_name(l, vm, pt, f, i + 1 < e->depth ? &e->frames[i + 1] : NULL,
				  out[n].name, sizeof(out[n].name));
			esc_clean(out[n].name); /* a string constant's name */
			n++;
		}
		trace = NULL; /* only the innermost Lua frame runs it */
	}
	return n;
}

int lua_leaf_function(struct lua *l, uint32_t pid, uint32_t idx, uint32_t *id)
{
	const struct vm_ent *vm = find_vm(l, pid);
	uint32_t vm_key = vm ? (uint32_t)(vm - l->vms) + 1 : UINT32_MAX;
	struct lstack_ent *e;
	int err = 0;

	*id = UINT32_MAX;
	if (idx >= l->nstacks)
		return 0;
	e = &l->stacks[idx];
	if (e->leaf_vm == vm_key) {
		*id = e->leaf;
		return 0;
	}
	for (uint32_t i = 0; i < e->depth; i++) {
		if (e->frames[i].kind != LP_LFRAME_LUA)
			continue;
		err = name_lua_frame(l, vm, &e->frames[i],
				     i + 1 < e->depth ? &e->frames[i + 1] : NULL, NULL, id);
		break;
	}
	if (!err) {
		e->leaf = *id;
		e->leaf_vm = vm_key;
	}
	return err;
}

/* The suffix of a frame marked with the functions whose code it may be
 * running (INLINED frames inl[0..n), leaf first): " [inlined: g, h]",
 * each named by its call in the marked frame f when the recorder knew
 * where that is, else by where it is defined; "?" for neither. */
static void inlined_suffix(struct lua *l, const struct vm_ent *vm, const struct lp_lframe *f,
			   const struct lp_lframe *const *inl, uint32_t n, int more,
			   char *buf, size_t len)
{
	const struct lp_proto *caller = find_proto(l, f->value);
	size_t at = 0;

	at += (size_t)snprintf(buf, len, " [inlined: ");
	for (uint32_t i = n; i-- > 0 && at < len;) {
		const struct lp_proto *pt = find_proto(l, inl[i]->value);
		char name[128], label[LUA_CHUNK_LABEL_MAX];

		if (inl[i]->pc && caller &&
		    lua_call_name(caller, inl[i]->pc, vm && (vm->flags & LP_LUAJIT_GC64),
				  name, sizeof(name)))
			;
		else if (pt && pt->firstline != UINT32_MAX)
			snprintf(name, sizeof(name), "%s:%u",
				 lua_chunk_label(pt->chunkname, label, sizeof(label)),
				 pt->firstline);
		else
			snprintf(name, sizeof(name), "?");
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i + 1 < n ? ", " : "", name);
	}
	if (at < len)
		snprintf(buf + at, len - at, "%s]", more ? ", ..." : "");
}

static const struct frame_info builtin_info = {
	.kind = FRAME_BUILTIN, .func = FRAMEINFO_NONE, .file = FRAMEINFO_NONE,
	.mapping = FRAMEINFO_NONE,
};

int lua_stack_names(struct lua *l, const struct maps_view *v, uint32_t idx, uint32_t *out,
		    uint32_t *n)
{
	const struct vm_ent *vm = find_vm(l, v->pid);
	const struct trace_ent *trace = NULL;
	const struct lp_lframe *inl[LUA_INLINED_NAMED];
	const struct lstack_ent *e;
	uint32_t ninl = 0;
	int more = 0;
	char text[64];
	int err = 0;

	*n = 0;
	if (idx >= l->nstacks)
		return 0;
	e = &l->stacks[idx];
	for (uint32_t i = 0; i < e->depth && !err; i++) {
		const struct lp_lframe *f = &e->frames[i];
		const struct lp_lframe *caller = i + 1 < e->depth ? &e->frames[i + 1] : NULL;
		uint32_t *id = &out[*n];

		switch (f->kind) {
		case LP_LFRAME_INLINED:
			if (ninl < LUA_INLINED_NAMED)
				inl[ninl++] = f;
			else
				more = 1;
			continue;
		case LP_LFRAME_LUA:
			if (ninl) {
				char suffix[512];

				inlined_suffix(l, vm, f, inl, ninl, more, suffix, sizeof(suffix));
				err = name_lua_frame_now(l, vm, f, caller, NULL, suffix, id);
				ninl = 0;
				more = 0;
			} else {
				err = name_lua_frame(l, vm, f, caller, trace, id);
			}
			trace = NULL; /* only the innermost Lua frame runs it */
			break;
		case LP_LFRAME_C:
			err = frames_user(l->fr, v, f->value, 0, id);
			break;
		case LP_LFRAME_FF:
			/* Ids 0 and 1 are Lua and C functions, never builtins:
			 * 0 marks a builtin whose frame was being rewritten. */
			if (f->value < 2) {
				err = frames_name_as(l->fr, "[builtin]", &builtin_info, id);
			} else if (vm && f->value < vm->nff && vm->ffnames[f->value][0]) {
				err = frames_name_as(l->fr, vm->ffnames[f->value],
						     &builtin_info, id);
			} else {
				snprintf(text, sizeof(text), "[builtin#%llu]",
					 (unsigned long long)f->value);
				err = frames_name_as(l->fr, text, &builtin_info, id);
			}
			break;
		case LP_LFRAME_ENTRY:
			*id = LUA_ENTRY_MARK;
			break;
		case LP_LFRAME_TRACE:
			/* Compiled or not, it is the Lua function's time; the
			 * trace's own code stands for the VM entry (stacks.c). */
			trace = unplaced_trace(l, f);
			continue;
		case LP_LFRAME_TRUNC:
			err = frames_name(l->fr, "[truncated]", id);
			break;
		case LP_LFRAME_NAME:
			*id = find_name(l, f->value);
			if (*id == UINT32_MAX)
				err = frames_name(l->fr, "[unnamed]", id);
			break;
		default:
			continue; /* a kind from a later version */
		}
		(*n)++;
	}
	return err;
}
