#include <errno.h>
#include "report/formats.h"
int out_flamegraph(FILE *out, const struct profile *p, const struct out_opts *o)
{
	(void)out; (void)p; (void)o;
	return -ENOSYS;
}
