/* The whittle command-line front end. wh_cli_main parses argv, runs a subcommand and returns
 * the process exit code: 0 success, 1 the answer is "fails" (run/compare verdicts), 2 usage
 * error, 3 bad input, 4 the check command itself is broken. Only the CLI prints errors, as
 * one line "whittle: <what>: <why> (<what to do>)". */
#ifndef WH_CLI_H
#define WH_CLI_H

int wh_cli_main(int argc, char **argv);

#endif
