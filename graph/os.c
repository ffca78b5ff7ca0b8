#include "graph/os.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double wh_os_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum wh_status wh_os_make_dir(const char *dir)
{
	char path[PATH_MAX];
	if (!dir || !*dir)
		return wh_error(WH_ERR_USAGE, "empty folder name (give a folder path)");
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
		return wh_error(WH_ERR_IO, "%s: path too long (use a shorter folder name)", dir);
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = '\0';
		struct stat sb;
		if (mkdir(path, 0777) != 0 && (errno != EEXIST || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
			return wh_error(WH_ERR_IO, "%s: cannot create folder: %s (check the path and permissions)", path,
					errno == EEXIST ? "a file is in the way" : strerror(errno));
		*p = c;
		if (!c)
			return WH_OK;
	}
}

enum wh_status wh_os_make_temp_dir(char *tmpl)
{
	if (!mkdtemp(tmpl))
		return wh_error(WH_ERR_IO, "%s: cannot create a temporary folder: %s (check TMPDIR and free space)", tmpl,
				strerror(errno));
	return WH_OK;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void wh_os_remove_tree(const char *path)
{
	struct stat sb;
	if (!path || lstat(path, &sb) != 0)
		return;
	if (!S_ISDIR(sb.st_mode)) {
		remove(path);
		return;
	}
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static enum wh_status byte_copy(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
	enum wh_status st = WH_OK;
	if (!a || !b) {
		st = wh_error(WH_ERR_IO, "%s: cannot copy to %s: %s (check both paths and permissions)", from, to,
			      strerror(errno));
		goto out;
	}
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, a)) > 0)
		if (fwrite(buf, 1, n, b) != n) {
			st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", to);
			goto out;
		}
	if (ferror(a))
		st = wh_error(WH_ERR_IO, "%s: read failed (check the file)", from);
out:
	if (a)
		fclose(a);
	if (b && fclose(b) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", to);
	return st;
}

enum wh_status wh_os_copy_file(const char *from, const char *to)
{
	if (link(from, to) == 0)
		return WH_OK;
	if (errno == EEXIST) {
		if (unlink(to) == 0 && link(from, to) == 0)
			return WH_OK;
	}
	return byte_copy(from, to);
}

enum wh_status wh_os_move_file(const char *from, const char *to)
{
	if (rename(from, to) == 0)
		return WH_OK;
	enum wh_status st = byte_copy(from, to);
	if (st == WH_OK)
		remove(from);
	return st;
}

bool wh_os_is_dir(const char *path)
{
	struct stat sb;
	return path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

enum wh_status wh_os_lock(const char *path, bool wait, const char *what_for, int *fd_out, bool *busy_out)
{
	*fd_out = -1;
	if (busy_out)
		*busy_out = false;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot open the lock of %s: %s (check the folder)", path, what_for, strerror(errno));
	int r;
	while ((r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) != 0 && errno == EINTR)
		;
	if (r != 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK) {
			if (busy_out)
				*busy_out = true;
			return wh_error(WH_ERR_IO, "%s: %s is in use by another whittle run (wait for it to finish, or choose another path)", path, what_for);
		}
		return wh_error(WH_ERR_IO, "%s: cannot lock %s: %s (check the file system supports flock)", path, what_for, strerror(e));
	}
	*fd_out = fd;
	return WH_OK;
}

void wh_os_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the last descriptor releases the flock */
}

bool wh_os_self_exe(char *buf, size_t size)
{
	if (!size)
		return false;
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0 || (size_t)n >= size - 1)
		return false;
	buf[n] = '\0';
	return buf[0] == '/';
}
enum wh_status wh_os_dir_of(const char *path, char *dir, size_t size)
{
	if ((size_t)snprintf(dir, size, "%s", path) >= size)
		return wh_error(WH_ERR_INVALID, "%s: path too long (shorten it)", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, size, ".");
	if (slash == dir)
		snprintf(dir, size, "/");
	return WH_OK;
}
