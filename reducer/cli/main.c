#include "executor/executor.h"
#include "reducer/cli/cli.h"

int main(int argc, char **argv)
{
	int rc = wh_cli_main(argc, argv);
	/* a GPU process ends here without the CUDA libraries' teardown (executor.h) */
	wh_device_finish(rc);
	return rc;
}
