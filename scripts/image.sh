#!/usr/bin/env bash
# A CPU image of strata made here from Debian packages (mmdebstrap), and a check
# that it works: the installed programs run inside it, as a user that is not root.
#   scripts/image.sh build [BUILD_DIR]     the image's root file system and a tarball of it
#   scripts/image.sh check [BUILD_DIR]     inside the image: every program's libraries resolve,
#                                          strata-train --version, strata-pack and a short training run
#   scripts/image.sh [all] [BUILD_DIR]     build, then check
#   scripts/image.sh packages BIN_DIR      the Debian package of each library the programs in
#                                          BIN_DIR load (what IMAGE_PACKAGES below comes from)
# BUILD_DIR (default build) is a built tree; it is installed (cmake --install) into a
# staging prefix and its bin/ goes to /opt/strata/bin. Needs root (chroot, mount
# namespaces), mmdebstrap and zstd (installed when missing, through apt-install.sh);
# the image is of the host's Debian release, since the binaries were linked
# against the host's libraries.
#   STRATA_IMAGE_DIR     output (default BUILD_DIR/image): rootfs/, strata-rootfs.tar.zst,
#                        image.txt (sizes, times), check/ (the check's home directory)
#   STRATA_IMAGE_CACHE   .deb cache kept between builds (default ~/.cache/strata/image-debs)
#   STRATA_IMAGE_MIRROR  apt sources for mmdebstrap (default: the host's
#                        /etc/apt/sources.list.d/debian.sources, else mmdebstrap's default)
#   STRATA_IMAGE_PREFIX  an installed prefix to take bin/ from instead of installing BUILD_DIR
#   STRATA_IMAGE_OMIT    packages to leave out of IMAGE_PACKAGES (to see the check fail)
#   STRATA_IMAGE_STEPS   training steps of the check's run (default 20)
# docs/container.md has the measured sizes and times and the CUDA Dockerfile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s)
say() { echo "[image] $*"; }
die() {
  echo "[image] FAILED: $*" >&2
  exit 1
}

# The runtime library packages of strata's programs: the packages owning the
# libraries they link (ELF NEEDED entries), found with
#   scripts/image.sh packages build/bin    (ldd resolves each one, dpkg -S names its package)
# on a Release build of Debian 12 with setup.sh's packages (2026-12-04). Their own
# dependencies come with them. libc6, libgcc-s1 and libstdc++6 are needed too;
# the essential set already brings the first two. `build` warns of a library
# this list misses, and `check` fails on it, naming it.
IMAGE_PACKAGES=(
  libstdc++6 libgomp1             # the C++ runtime; OpenMP (the CPU GEMM, oneDNN)
  libopenblas0-pthread            # libopenblas.so.0, through Debian's alternatives
  libdnnl2                        # oneDNN: the CPU convolution
  libhdf5-103-1                   # libhdf5_serial.so.103: shards and checkpoints
  libcurl4 libssl3 zlib1g         # the S3 client, its signatures and checksums
  libyaml-cpp0.7                  # configs
  libprometheus-cpp-core1.0       # the metrics endpoint
  libxxhash0                      # shard checksums
  libturbojpeg0 libspng0          # JPEG and PNG decoding in the loader and strata-pack files
  libzstd1 liblz4-1               # zstd and LZ4 shard objects (strata-pack --compress)
  libopenmpi3                     # libmpi.so.40, libmpi_cxx.so.40
)
# Not libraries of the programs: mpirun and orted for scripts/strata-mpirun and
# jobs of several ranks; procps for pgrep/pkill in a container's stop hooks.
IMAGE_TOOLS=(openmpi-bin procps)
USER_ID=1000 # the image's user "strata", who runs the check

# Prints "SONAME PATH PACKAGE" for every library the ELF programs in $1 need
# directly; PACKAGE is "-" for a library no installed package owns.
needed_libs() {
  local dir=$1 f so path real pkg
  declare -A seen=()
  for f in "$dir"/*; do
    if ! [ -f "$f" ] || ! head -c4 "$f" | grep -q ELF; then continue; fi
    local ldd_out
    ldd_out=$(ldd "$f")
    for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ -n ${seen[$so]:-} ]] && continue
      seen[$so]=1
      path=$(awk -v n="$so" '$1 == n && $2 == "=>" { print $3; exit }' <<<"$ldd_out")
      if [ -z "$path" ]; then
        # the loader itself is listed by its path, not "name => path"
        path=$(awk -v n="$so" 'index($1, "/" n) { print $1; exit }' <<<"$ldd_out")
      fi
      if [ -z "$path" ] || [ "$path" = not ]; then die "$f: $so is not found on this machine"; fi
      real=$(realpath "$path")
      pkg=-
      # dpkg's database names a file by the path its package shipped, /lib or /usr/lib
      for p in "$path" "$real" "/usr$path" "/usr$real" "${path#/usr}" "${real#/usr}"; do
        if pkg=$(dpkg-query -S "$p" 2>/dev/null | head -1); then
          pkg=${pkg%%:*}
          break
        fi
        pkg=-
      done
      echo "$so $real $pkg"
    done
  done
}

cmd=${1:-all}
case "$cmd" in
  packages)
    [ -d "${2:-}" ] || die "usage: scripts/image.sh packages BIN_DIR"
    needed_libs "$2" | sort -k3,3 -k1,1
    exit 0
    ;;
  build | check | all) ;;
  *) die "unknown command '$cmd' (build, check, all, packages)" ;;
esac

build=$(cd "${2:-$root/build}" 2>/dev/null && pwd) || die "build dir '${2:-$root/build}' not found (configure and build first)"
dir=${STRATA_IMAGE_DIR:-$build/image}
rootfs=$dir/rootfs
tarball=$dir/strata-rootfs.tar.zst
[ "$(id -u)" = 0 ] || die "needs root: mmdebstrap's root mode, chroot and mount namespaces"
mkdir -p "$dir"

do_build() {
  # What building the image needs, installed here as the quickstart's reader runs
  # this script without scripts/test.sh (which installs them too).
  "$root/scripts/apt-install.sh" image mmdebstrap zstd
  command -v mmdebstrap >/dev/null || die "mmdebstrap not found (Debian package mmdebstrap)"
  command -v zstd >/dev/null || die "zstd not found (Debian package zstd)"
  . /etc/os-release
  [ "${ID:-}" = debian ] && [ -n "${VERSION_CODENAME:-}" ] ||
    die "the host is not Debian: the image must be of the release the binaries were linked on"
  local suite=$VERSION_CODENAME
  local mirror=${STRATA_IMAGE_MIRROR:-}
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=/etc/apt/sources.list.d/debian.sources
  fi
  local cache=${STRATA_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/image-debs}
  mkdir -p "$cache"

  local stage=$dir/stage
  if [ -n "${STRATA_IMAGE_PREFIX:-}" ]; then
    stage=$(cd "$STRATA_IMAGE_PREFIX" && pwd)
    say "programs from the installed prefix $stage"
  else
    say "installing $build into a staging prefix"
    rm -rf "$stage"
    cmake --install "$build" --prefix "$stage" >"$dir/install.log" || {
      cat "$dir/install.log"
      die "cmake --install $build failed"
    }
  fi

  # the packages this build's programs need, against the list above
  local pkgs=() omit=" ${STRATA_IMAGE_OMIT:-} " p
  for p in "${IMAGE_PACKAGES[@]}" "${IMAGE_TOOLS[@]}"; do
    [[ $omit == *" $p "* ]] && say "leaving out $p (STRATA_IMAGE_OMIT)" && continue
    pkgs+=("$p")
  done
  local outside=() so path pkg
  while read -r so path pkg; do
    if [ "$pkg" = - ]; then
      outside+=("$path")
    elif [[ " ${pkgs[*]} libc6 libgcc-s1 " != *" $pkg "* ]]; then
      say "warning: $so comes from $pkg, which the image does not include (IMAGE_PACKAGES)"
    fi
  done < <(needed_libs "$stage/bin")
  # A build with the CUDA backend links the toolkit's libraries, which Debian does not
  # package (CUDA 13): they are copied from where the build found them. Anything
  # else no package owns was installed by hand, and no image should depend on it.
  for path in "${outside[@]}"; do
    [[ $path == /usr/local/cuda* ]] || die "$path is owned by no Debian package and is not the CUDA toolkit's"
  done

  say "mmdebstrap $suite (variant essential, ${#pkgs[@]} packages and their dependencies; .deb cache $cache)"
  rm -rf "$rootfs" "$tarball"
  local m0
  m0=$(date +%s)
  local incl
  incl=$(
    IFS=,
    echo "${pkgs[*]}"
  )
  # The cache: sync-in fills the image's apt archive before the download, so apt
  # fetches only what is missing (essential/unlink: the essential packages stay there
  # too); the customize hooks then replace the cache with this build's .debs, which
  # the cleanup step removes from the image. The path-excludes leave out the
  # manuals, info pages, translations and documentation, not the copyright files.
  # The merged-usr hook makes /bin, /lib, ... links into /usr itself, as Debian 12 is
  # laid out, instead of installing the usrmerge package, which would bring Perl.
  local margs=(--variant=essential --include="$incl" --skip=essential/unlink
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --aptopt='Acquire::Languages "none"' --dpkgopt=force-unsafe-io
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/'
    --setup-hook="sync-in '$cache' /var/cache/apt/archives/"
    --customize-hook="find '$cache' -name '*.deb' -delete"
    --customize-hook="sync-out /var/cache/apt/archives '$cache'")
  mmdebstrap "${margs[@]}" "$suite" "$rootfs" ${mirror:+"$mirror"} >"$dir/mmdebstrap.log" 2>&1 || {
    tail -30 "$dir/mmdebstrap.log"
    die "mmdebstrap failed (log: $dir/mmdebstrap.log)"
  }
  local mmdebstrap_s=$(($(date +%s) - m0))

  say "strata into /opt/strata, the user strata ($USER_ID), the smoke run's data"
  mkdir -p "$rootfs/opt/strata"
  cp -a "$stage/bin" "$rootfs/opt/strata/"
  # the configs, where deploy/kubernetes and docs/launch.md look for them
  cp -a "$root/configs" "$rootfs/opt/strata/configs"
  # a sample for the check: Fashion-MNIST's test split (Debian's dataset-fashion-mnist)
  local fm=/usr/share/datasets/fashion-mnist
  mkdir -p "$rootfs/opt/strata/share/fashion-mnist"
  cp "$fm/t10k-images-idx3-ubyte.gz" "$fm/t10k-labels-idx1-ubyte.gz" "$rootfs/opt/strata/share/fashion-mnist/" ||
    die "$fm has no test split (Debian package dataset-fashion-mnist)"
  if [ ${#outside[@]} -gt 0 ]; then
    # the CUDA libraries (hard links where the file system allows: no second copy)
    local cudalib=/usr/local/cuda/lib
    mkdir -p "$rootfs$cudalib"
    for path in "${outside[@]}"; do
      ln -f "$path" "$rootfs$cudalib/" 2>/dev/null || cp "$path" "$rootfs$cudalib/"
    done
    echo "$cudalib" >"$rootfs/etc/ld.so.conf.d/strata-cuda.conf"
    chroot "$rootfs" /sbin/ldconfig
    say "with the CUDA backend's libraries, from the toolkit: $(printf '%s ' "${outside[@]##*/}")"
  fi
  # the user, as useradd would (passwd, the package with useradd, is not in the essential set)
  echo "strata:x:$USER_ID:$USER_ID:strata:/home/strata:/bin/bash" >>"$rootfs/etc/passwd"
  echo "strata:x:$USER_ID:" >>"$rootfs/etc/group"
  echo "strata:!:$(($(date +%s) / 86400)):0:99999:7:::" >>"$rootfs/etc/shadow"
  mkdir -p "$rootfs/home/strata" "$rootfs/cache"
  chown "$USER_ID:$USER_ID" "$rootfs/home/strata" "$rootfs/cache"
  [ -n "${STRATA_IMAGE_PREFIX:-}" ] || rm -rf "$stage"

  say "tarball $tarball"
  local z0
  z0=$(date +%s)
  tar --numeric-owner -C "$rootfs" -cf - . | zstd -q -T0 -3 -o "$tarball"
  local tar_s=$(($(date +%s) - z0))

  local rootfs_kb tar_b strata_kb cuda_kb=0
  rootfs_kb=$(du -sk "$rootfs" | cut -f1)
  strata_kb=$(du -sk "$rootfs/opt/strata" | cut -f1)
  [ -d "$rootfs/usr/local/cuda" ] && cuda_kb=$(du -sk "$rootfs/usr/local/cuda" | cut -f1)
  tar_b=$(stat -c %s "$tarball")
  {
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "strata=$("$rootfs/opt/strata/bin/strata-train" --version 2>/dev/null || echo unknown)"
    echo "suite=$suite"
    echo "packages=$(chroot "$rootfs" dpkg-query -W | wc -l)"
    echo "rootfs_mib=$((rootfs_kb / 1024))"
    echo "strata_mib=$((strata_kb / 1024))"
    echo "cuda_libs_mib=$((cuda_kb / 1024))"
    echo "tarball_mib=$((tar_b / 1048576))"
    echo "mmdebstrap_s=$mmdebstrap_s"
    echo "tarball_s=$tar_s"
    echo "build_s=$(($(date +%s) - t0))"
  } >"$dir/image.txt"
  say "built in $(($(date +%s) - t0)) s (mmdebstrap $mmdebstrap_s s, tarball $tar_s s):" \
    "rootfs $((rootfs_kb / 1024)) MiB (strata $((strata_kb / 1024)) MiB, CUDA libraries $((cuda_kb / 1024)) MiB)," \
    "tarball $((tar_b / 1048576)) MiB, $(grep packages= "$dir/image.txt" | cut -d= -f2) packages"
}

# Runs "$@" inside the image as the user strata, in new mount, PID and network
# namespaces: /proc is the namespace's own, there is no network but loopback (down),
# and the user's home and /cache are directories of the check's outside the image,
# so that the image stays as built and the check reads the results.
in_image() {
  unshare --mount --pid --net --fork --propagation private -- bash -c '
    set -e
    r=$1 home=$2 cache=$3
    shift 3
    mount -t proc proc "$r/proc"
    mount --bind "$home" "$r/home/strata"
    mount --bind "$cache" "$r/cache"
    exec chroot --userspec='"$USER_ID:$USER_ID"' --groups='"$USER_ID"' "$r" \
      env -i HOME=/home/strata USER=strata LANG=C.UTF-8 PATH=/opt/strata/bin:/usr/bin:/bin \
      STRATA_CACHE_DIR=/cache "$@"
  ' in_image "$rootfs" "$home" "$cache" "$@"
}

do_check() {
  [ -x "$rootfs/opt/strata/bin/strata-train" ] || die "no image at $rootfs (scripts/image.sh build first)"
  local c0
  c0=$(date +%s)
  local work=$dir/check home cache
  rm -rf "$work"
  home=$work/home cache=$work/cache
  mkdir -p "$home" "$cache"
  chown "$USER_ID:$USER_ID" "$home" "$cache"

  say "check: who runs: $(in_image id)"
  # Every program's libraries, resolved by the image's own loader (its ldd): a
  # package left out shows here as "not found", named, for every program at once.
  local f missing=
  for f in "$rootfs"/opt/strata/bin/*; do
    head -c4 "$f" | grep -q ELF || continue
    local out
    out=$(in_image ldd "/opt/strata/bin/${f##*/}" 2>&1) || true
    if grep -q "not found" <<<"$out"; then
      missing+=$(grep "not found" <<<"$out" | sed "s|^[[:space:]]*|  ${f##*/}: |")$'\n'
    fi
  done
  [ -z "$missing" ] || die "libraries the image lacks (a package missing from IMAGE_PACKAGES in scripts/image.sh):"$'\n'"$missing"

  local version
  version=$(in_image strata-train --version 2>&1) || die "strata-train --version in the image: $version"
  [[ $version =~ ^strata\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [^\)]+\)$ ]] || die "strata-train --version printed: $version"
  say "check: strata-train --version: $version"

  in_image strata-pack idx --images /opt/strata/share/fashion-mnist/t10k-images-idx3-ubyte.gz \
    --labels /opt/strata/share/fashion-mnist/t10k-labels-idx1-ubyte.gz --out /home/strata/data \
    --shard-size 2MiB --quiet >"$work/pack.log" 2>&1 || {
    cat "$work/pack.log"
    die "strata-pack in the image failed"
  }
  say "check: strata-pack: $(ls "$home/data" | wc -l) files in the packed dataset"

  # The MLP on the 10,000 test images, batches of 100, one thread: a checkpoint at
  # step 10 and at the last step, the cache in /cache (STRATA_CACHE_DIR).
  local steps=${STRATA_IMAGE_STEPS:-20} rc=0
  in_image strata-train --config /opt/strata/configs/fashion_mnist_mlp.yaml \
    data.train_url=file:///home/strata/data data.test_url= data.batch_size=100 trainer.threads=1 \
    trainer.max_steps="$steps" schedule.total_steps=100 schedule.warmup_steps=5 \
    checkpoint.every_steps=10 logging.every_steps=5 logging.console=plain \
    --run-dir /home/strata/run >"$work/train.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || {
    tail -20 "$work/train.log"
    die "strata-train in the image exited $rc (log: $work/train.log)"
  }
  local summary=$home/run/summary.json
  [ -f "$summary" ] || die "the run wrote no summary.json ($home/run: $(ls "$home/run" | tr '\n' ' '))"
  local got
  got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"])' "$summary")
  [ "$got" = "$steps" ] || die "summary.json says $got steps, expected $steps"
  [ -n "$(find "$home/run/checkpoints" -regex ".*/step-0*$steps\.h5")" ] ||
    die "no checkpoint of step $steps: $(ls "$home/run/checkpoints")"
  [ "$(stat -c %u "$summary")" = "$USER_ID" ] || die "summary.json is not the user's"
  # the loss the log printed every 5 steps fell
  local losses
  losses=$(sed -n 's|^step [0-9]*/[0-9]* loss \([0-9.]*\) .*|\1|p' "$work/train.log" | tr '\n' ' ' | sed 's/ $//')
  awk '{ exit !(NF >= 2 && $NF < $1) }' <<<"$losses" || die "the loss did not fall: $losses"
  say "check: strata-train: exit 0, $got steps in summary.json, loss every 5 steps: $losses," \
    "checkpoint $(ls "$home/run/checkpoints" | tail -1), run directory owned by uid $USER_ID"
  say "check: passed in $(($(date +%s) - c0)) s; $(tr '\n' ' ' <"$dir/image.txt")"
}

case "$cmd" in
  build) do_build ;;
  check) do_check ;;
  all)
    do_build
    do_check
    ;;
esac
