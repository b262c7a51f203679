/*
 * test_report_demangle.c - native names of C++ and Rust as people read
 * them (lib/demangle.c, report/frames.c): an object's embedded symbols,
 * mangled, print demangled in every view, raw with --no-demangle; a C
 * name is left as it is.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/demangle.h"
#include "tests/unit/report_test.h"

TEST(demangle_cxx_and_rust)
{
	char b[256];

	CHECK(lp_demangle("_ZN7EThread7executeEv", b, sizeof(b)) && !strcmp(b, "EThread::execute()"));
	CHECK(lp_demangle("_RNvCs1234_7mycrate3foo", b, sizeof(b)) && !strcmp(b, "mycrate::foo"));
	CHECK(lp_demangle("_ZN3std2rt10lang_start17h0123456789abcdefE", b, sizeof(b)) &&
	      !strcmp(b, "std::rt::lang_start"));
	CHECK(!lp_demangle("main", b, sizeof(b)) && !lp_demangle("_Zgarbage", b, sizeof(b)));
	/* A PLT stub of a C++ function (lib/elfplt.h). */
	CHECK(lp_demangle("_ZN7EThread7executeEv@plt", b, sizeof(b)) &&
	      !strcmp(b, "EThread::execute()@plt"));
	CHECK(!lp_demangle("_Zgarbage@plt", b, sizeof(b)) && !lp_demangle("@plt", b, sizeof(b)));
	/* Cut to fit, still a string. */
	CHECK(lp_demangle("_ZN7EThread7executeEv", b, 8) && !strcmp(b, "EThread"));
}

/* pid 7 runs /x/server, whose symbols the trace embeds: main calls
 * EThread::execute(), which calls a std:: template. */
static int write_cxx_trace(const char *path)
{
	static const uint8_t bid[] = { 1, 2, 3, 4 };
	static const struct lp_objseg segs[] = { { 0x1000, 0x3000, 0x401000 } };
	static const struct lp_objsym syms[] = {
		{ 0x401000, 0x100, "main" },
		{ 0x401100, 0x100, "_ZN7EThread7executeEv" },
		{ 0x401200, 0x100, "_ZNSt16_Sp_counted_baseILN9__gnu_cxx12_Lock_policyE2EE10_M_releaseEv" },
	};
	static const struct lp_mapping maps[] = {
		{ .start = 0x10000, .end = 0x13000, .pgoff = 0x1000,
		  .prot = LP_PROT_READ | LP_PROT_EXEC, .path = "/x/server", .object = 3 },
	};
	uint64_t s[] = { 0x10210, 0x10111, 0x10011 };
	struct lp_record r = { .type = LP_REC_OBJECT };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	r.u.object = (struct lp_object){ 3, "/x/server", LP_OBJID_BUILD_ID, sizeof(bid), bid, 1 };
	err = rt_process(w, 7, 1, LP_PROC_EXISTING, "server", "/x/server", t) ?:
	      trace_write(w, &r);
	r.type = LP_REC_SYMTAB;
	r.u.symtab = (struct lp_symtab){ 3, 1, segs, 3, syms };
	err = err ?: trace_write(w, &r) ?: rt_maps(w, 7, LP_MAPS_REPLACE, maps, 1) ?:
	      rt_stack(w, 1, LP_STACK_USER, s, 3) ?: rt_samples(w, &t, 7, 7, 0, 1, 3);
	return trace_writer_close(w, NULL) ?: err;
}

TEST(report_demangles_native_names)
{
	const char *path = rt_path("cxx.lp");
	char *out = NULL;

	CHECK(write_cxx_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && !strcmp(out, "main;EThread::execute();std::_Sp_counted_base<"
			       "(__gnu_cxx::_Lock_policy)2>::_M_release() 3\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "-n", "5", path, NULL) == 0);
	CHECK(out && strstr(out, "EThread::execute()") && !strstr(out, "_ZN"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--no-demangle",
		     path, NULL) == 0);
	CHECK(out && !strcmp(out, "main;_ZN7EThread7executeEv;_ZNSt16_Sp_counted_baseILN9"
			       "__gnu_cxx12_Lock_policyE2EE10_M_releaseEv 3\n"));
	free(out);
}
