/*
 * events.c - which kinds of event a recording takes (see events.h).  The
 * kinds are format/kinds.h's; what each needs of the sampler is here: a
 * kind this file does not know cannot be recorded, whatever the list says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "format/trace.h"
#include "record/events.h"
#include "sampler.skel.h"

int events_parse(const char *arg, unsigned *kinds, const char **bad, size_t *badlen)
{
	char name[32];

	*kinds = 0;
	while (*arg) {
		size_t n = strcspn(arg, ",");
		uint32_t k;

		if (n >= sizeof(name) || (memcpy(name, arg, n), name[n] = 0,
					  lp_kind_parse(name, &k)) ||
		    !(EVENTS_ALL & EVENTS_BIT(k))) {
			*bad = arg;
			*badlen = n;
			return -EINVAL;
		}
		*kinds |= EVENTS_BIT(k);
		arg += n + (arg[n] == ',');
	}
	if (!*kinds) {
		*bad = arg;
		*badlen = 0;
		return -EINVAL;
	}
	return 0;
}

void events_names(char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < LP_KIND_MAX && at < len; k++)
		if (lp_kind_info(k) && (EVENTS_ALL & EVENTS_BIT(k)))
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					       lp_kind_info(k)->name);
}

void events_prepare(struct sampler *skel, unsigned kinds, unsigned freq_hz,
		    unsigned long long stall_ns, unsigned long long alloc_every)
{
	int alloc = !!(kinds & EVENTS_BIT(LP_KIND_ALLOC));
	int inuse = !!(kinds & EVENTS_BIT(LP_KIND_INUSE));

	int offcpu = !!(kinds & EVENTS_BIT(LP_KIND_OFF_CPU));
	int luawait = !!(kinds & EVENTS_BIT(LP_KIND_LUA_WAIT));
	int stall = !!(kinds & EVENTS_BIT(LP_KIND_STALL));

	long page = sysconf(_SC_PAGESIZE);

	/* The walker's unit of vm_pgoff: this kernel's page. */
	skel->rodata->page_shift = page > 0 ? (unsigned)__builtin_ctzl((unsigned long)page) : 12;
	/* One wait event per sampling period of waiting, on average. */
	skel->rodata->offcpu_on = offcpu;
	skel->rodata->wait_interval_ns = 1000000000ull / (freq_hz ? freq_hz : 99);
	bpf_program__set_autoload(skel->progs.on_switch, offcpu);
	bpf_program__set_autoload(skel->progs.on_sys_exit, offcpu);
	skel->rodata->stall_on = stall;
	skel->rodata->stall_threshold_ns = stall_ns;
	bpf_program__set_autoload(skel->progs.on_stall_exit, stall);
	bpf_program__set_autoload(skel->progs.on_stall_enter, stall);
	bpf_program__set_autoload(skel->progs.on_sample, !!(kinds & EVENTS_BIT(LP_KIND_CPU)));
	/* Attached per VM object (session_lua.c, probe_lua_resume()). */
	bpf_program__set_autoload(skel->progs.on_resume, luawait);
	bpf_program__set_autoload(skel->progs.on_resume_return, luawait);
	/* Attached per VM allocator (session_alloc.c, probe_alloc()). */
	skel->rodata->alloc_every = alloc_every;
	skel->rodata->alloc_inuse = inuse;
	bpf_program__set_autoload(skel->progs.on_alloc, alloc);
	bpf_program__set_autoload(skel->progs.on_alloc_return, inuse);
	bpf_program__set_autoload(skel->progs.on_lua_close, inuse);
}
