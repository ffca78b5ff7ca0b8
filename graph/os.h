/* Small operating-system helpers that several modules need, written once: monotonic time,
 * folders (create with parents, temporary, remove a tree), file copy that hard-links first,
 * file move. Every function that can fail returns enum wh_status and records the one-line
 * error (graph/status.h) naming the path. No state; safe from any thread. */
#ifndef WH_OS_H
#define WH_OS_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/status.h"

/* Seconds on the monotonic clock (for durations only). */
double wh_os_now_s(void);

/* mkdir -p: creates path and its missing parents (mode 0777 before the umask). An existing
 * folder is fine; a file in the way is WH_ERR_IO. */
enum wh_status wh_os_make_dir(const char *path);

/* Creates a fresh folder from a mkdtemp template ("<dir>/name.XXXXXX"; the X's are replaced
 * in place, so tmpl must be writable). */
enum wh_status wh_os_make_temp_dir(char *tmpl);

/* Removes a file or a folder tree (like rm -rf; symbolic links are removed, never
 * followed). A path that does not exist is fine. */
void wh_os_remove_tree(const char *path);

/* Copies a regular file: a hard link when both paths are on one file system (the copy costs
 * nothing and the source is never modified in place by whittle), else a byte copy. `to`
 * must not exist yet when linking; an existing `to` is replaced. */
enum wh_status wh_os_copy_file(const char *from, const char *to);

/* rename(), falling back to copy + remove across file systems. */
enum wh_status wh_os_move_file(const char *from, const char *to);

/* An advisory, exclusive lock (flock) on path, created when missing (mode 0666 before the
 * umask); the lock lasts until wh_os_unlock(*fd_out) or the process ends. wait: block until
 * the holder lets go; else a held lock is WH_ERR_IO at once and *busy_out (may be NULL) is
 * set. Errors name the path and what_for ("the timing cache", "the artifacts folder"). */
enum wh_status wh_os_lock(const char *path, bool wait, const char *what_for, int *fd_out, bool *busy_out);
/* Releases a lock from wh_os_lock (closes fd); -1 is a no-op. */
void wh_os_unlock(int fd);

/* The absolute path of the running executable (/proc/self/exe) into buf; false when it
 * cannot be told or does not fit. */
bool wh_os_self_exe(char *buf, size_t size);

/* The folder a file path is in, into dir (size bytes): "." for a bare name, "/" for a file
 * at the root. WH_ERR_INVALID when the path does not fit. */
enum wh_status wh_os_dir_of(const char *path, char *dir, size_t size);
/* Whether path names an existing folder. */
bool wh_os_is_dir(const char *path);

#endif
