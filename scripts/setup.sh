#!/bin/bash
# Installs what a fresh Debian 12 machine lacks to build and test whittle: the apt packages
# below (with munge and Slurm's daemons and commands for the one-host cluster of
# scripts/slurm-local.sh) and the npm packages of scripts/package-lock.json (ONNX Runtime for
# Node and the PaddleOCR models). Idempotent: when everything is there it prints nothing and changes
# nothing, so test.sh and demo.sh call it on every run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

apt_packages=(
	build-essential cmake pkg-config
	protobuf-c-compiler libprotobuf-c-dev libonnx-dev
	libpcre2-dev libxxhash-dev check libjansson-dev
	python3-onnx python3-numpy
	clang libclang-rt-14-dev
	munge slurmctld slurmd slurm-client
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
	sudo_cmd=(sudo)
fi

missing=()
for p in "${apt_packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
# NodeSource's nodejs bundles npm and conflicts with Debian's npm package, so Node is judged
# by its commands, not by package names.
if ! command -v node >/dev/null 2>&1; then
	missing+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1; then
	missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo_cmd[@]}" apt-get update -qq >/dev/null
	"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# node_modules is stale when any package of the lock file is absent or at another version;
# comparing versions (rather than timestamps) keeps a fresh clone and a copied tree honest.
npm_fresh() {
	[ -d "$here/node_modules" ] || return 1
	(cd "$here" && node -e '
		const fs = require("fs");
		const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
		for (const [p, meta] of Object.entries(lock.packages || {})) {
			if (p === "" || meta.optional || meta.dev) continue;
			let v;
			try { v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version; }
			catch (e) { process.exit(1); }
			if (v !== meta.version) process.exit(1);
		}
	') 2>/dev/null
}

if [ ! -f "$here/package-lock.json" ]; then
	echo "setup: scripts/package-lock.json is missing (restore it from git)" >&2
	exit 1
fi
if ! npm_fresh; then
	echo "setup: npm ci in scripts/"
	# The CPU binaries ship inside the onnxruntime-node package; its post-install step would
	# only fetch optional GPU providers from outside the npm registry, so it is skipped.
	(cd "$here" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	if ! npm_fresh; then
		echo "setup: npm ci did not install what scripts/package-lock.json lists" >&2
		exit 1
	fi
fi
