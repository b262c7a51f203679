/* SPDX-License-Identifier: GPL-2.0 */
/*
 * luawait.bpf.h - Lua-land waits (LP_KIND_LUA_WAIT): the time a coroutine
 * spends yielded to its host, by the Lua stack it yielded at.  Included by
 * sampler.bpf.c, whose is_target() and wait_taken() it uses.
 *
 * OpenResty's waits (a cosocket read, ngx.sleep, a semaphore) never take
 * the worker off the CPU: the handler's coroutine yields, lua_resume()
 * returns LUA_YIELD to nginx's event loop, and a later event resumes it
 * with lua_resume() again.  Every host that drives coroutines from C does
 * the same (rspamd, knot-resolver, Traffic Server's tslua), and both of
 * OpenResty's yield paths (lua_yield() from C, lua-resty-core's
 * coroutine._yield builtin) return through lua_resume().  So the recorder
 * puts two probes on each VM's exported lua_resume:
 *
 *   entry   lua_resume(L, nargs): note L by (tid, sp), for the return;
 *           if L's yield is on record, the wait ends: taken or not
 *           (wait_taken()), and a wait taken is captured here: the
 *           resumer's native stack, and L's Lua frames, which are still
 *           those of the yield (walk_lua_suspended()).
 *   return  LUA_YIELD: L's wait begins now, in lua_waits.
 *
 * A return's sp is its entry's plus the return address the call pushed
 * (x86_64), which pairs the two across nested resumes on one thread.
 * The entry's sp for that reason, as lua_waits', is kept in LRU maps: a
 * coroutine never resumed (a request aborted, its VM closed) is forgotten
 * when space is needed, not counted.
 */
#ifndef LUAPROF_BPF_LUAWAIT_BPF_H
#define LUAPROF_BPF_LUAWAIT_BPF_H

#define LP_LUA_YIELD 1 /* lua_resume()'s status: the coroutine yielded */

struct luawait_call {
	__u32 tid, pad;
	__u64 sp; /* at lua_resume()'s entry */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct luawait_call);
	__type(value, __u64); /* the coroutine resumed */
} luawait_calls SEC(".maps");

struct luawait_key {
	__u32 tgid, pad;
	__u64 L;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct luawait_key);
	__type(value, __u64); /* when it yielded */
} luawait_yields SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(on_resume, __u64 L)
{
	__u64 id = bpf_get_current_pid_tgid(), now, start, weight, *at;
	struct luawait_call call = { .tid = (__u32)id, .sp = PT_REGS_SP(ctx) };
	struct luawait_key key = { .tgid = id >> 32, .L = L };
	struct capture *cap;
	__u32 zero = 0;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || !is_target(cap, key.tgid))
		return 0;
	bpf_map_update_elem(&luawait_calls, &call, &L, BPF_ANY);
	at = bpf_map_lookup_elem(&luawait_yields, &key);
	if (!at)
		return 0; /* a new coroutine, or one whose yield we missed */
	now = bpf_ktime_get_ns();
	start = *at;
	bpf_map_delete_elem(&luawait_yields, &key);
	if (now > start && wait_taken(now - start, &weight))
		/* The resumer's stacks, from the uprobe's registers, and
		 * L's Lua frames. */
		capture_in_task(ctx, id, LP_KIND_LUA_WAIT, weight, 1, start, ctx, L, false);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(on_resume_return, int status)
{
	__u64 id = bpf_get_current_pid_tgid(), *L, now;
	struct luawait_call call = { .tid = (__u32)id, .sp = PT_REGS_SP(ctx) - LP_ENTRY_SP_TO_RETURN };
	struct luawait_key key = { .tgid = id >> 32 };

	L = bpf_map_lookup_elem(&luawait_calls, &call);
	if (!L)
		return 0;
	key.L = *L;
	bpf_map_delete_elem(&luawait_calls, &call);
	if (status != LP_LUA_YIELD)
		return 0;
	now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&luawait_yields, &key, &now, BPF_ANY))
		__sync_fetch_and_add(&counters.lost_luawait, 1);
	return 0;
}

#endif
