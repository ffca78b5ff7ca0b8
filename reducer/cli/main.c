#include "reducer/cli/cli.h"

int main(int argc, char **argv)
{
	return wh_cli_main(argc, argv);
}
