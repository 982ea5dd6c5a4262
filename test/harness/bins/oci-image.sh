# Sourced by build.sh. oci_image BINARY NAME:TAG ARCHIVE USER [DIR [ZONEINFO]]: writes ARCHIVE, an OCI
# image layout (tar) FROM scratch holding the static BINARY, as /DIR/<its name> (or /<its name>
# without DIR), its entrypoint, run as USER (uid:gid); with ZONEINFO (a zone database zip, Go's
# lib/time/zoneinfo.zip), that file too, as /DIR/zoneinfo.zip, named by the ZONEINFO variable, where
# Go's time package looks first. NAME:TAG goes in the index's annotations,
# under which `ctr images import` and podman load it. Reproducible: fixed owners, modes and
# times, so the same binary gives the same digests.
oci_image() {
  local bin=$1 ref=$2 archive=$3 user=$4 dir=${5:-} zoneinfo=${6:-}
  local name path tmp config manifest ld cd md ls cs ms arch env='' files
  name=$(basename "$bin")
  path=${dir:+$dir/}$name
  arch=$(go env GOARCH)
  tmp=$(mktemp -d)
  mkdir -p "$tmp/root${dir:+/$dir}" "$tmp/oci/blobs/sha256"
  cp "$bin" "$tmp/root/$path"
  chmod 0755 "$tmp/root/$path" ${dir:+"$tmp/root/$dir"}
  files=${dir:-$name}
  if [ -n "$zoneinfo" ]; then
    install -m 0644 "$zoneinfo" "$tmp/root/${dir:+$dir/}zoneinfo.zip"
    env=',"Env":["ZONEINFO=/'${dir:+$dir/}'zoneinfo.zip"]'
    [ -n "$dir" ] || files="$files zoneinfo.zip"
  fi
  # shellcheck disable=SC2086 # $files: one or two names, neither with spaces
  tar -C "$tmp/root" --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name -cf "$tmp/layer.tar" $files
  ld=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1); ls=$(stat -c %s "$tmp/layer.tar")
  mv "$tmp/layer.tar" "$tmp/oci/blobs/sha256/$ld"
  config='{"architecture":"'$arch'","os":"linux","config":{"Entrypoint":["/'$path'"],"User":"'$user'"'$env'},"rootfs":{"type":"layers","diff_ids":["sha256:'$ld'"]}}'
  cd=$(printf %s "$config" | sha256sum | cut -d' ' -f1); cs=${#config}
  printf %s "$config" >"$tmp/oci/blobs/sha256/$cd"
  manifest='{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'$cd'","size":'$cs'},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:'$ld'","size":'$ls'}]}'
  md=$(printf %s "$manifest" | sha256sum | cut -d' ' -f1); ms=${#manifest}
  printf %s "$manifest" >"$tmp/oci/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$ref" "${ref##*:}" >"$tmp/oci/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$tmp/oci/oci-layout"
  tar -C "$tmp/oci" --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name -cf "$archive.tmp" oci-layout index.json blobs
  mv -f "$archive.tmp" "$archive"
  rm -rf "$tmp"
}

# ko_images DIR MODULE OUT REPOSITORY [ZONEINFO]: for each command of DIR/go.mod's tool block (packages under
# MODULE/cmd/, built into OUT), OUT/<binary>.oci.tar named REPOSITORY/<path under cmd/>:<MODULE's
# version>, laid out as ko, which Knative releases with, lays it out: /ko-app/<binary>, user 65532
# (non-root, so a Pod's runAsNonRoot passes without a runAsUser of its own), with ZONEINFO as
# oci_image takes it. Remade when the
# binary or this recipe is newer than the archive.
ko_images() {
  local dir=$1 module=$2 out=$3 repository=$4 zoneinfo=${5:-} version pkg cmd bin
  version=$(cd "$dir" && go list -m -f '{{.Version}}' "$module")
  for pkg in $(cd "$dir" && go list tool); do
    cmd=${pkg#"$module"/cmd/}
    bin="$out/$(basename "$cmd")"
    if [ ! "$bin.oci.tar" -nt "$bin" ] || [ ! "$bin.oci.tar" -nt "${BASH_SOURCE[0]}" ]; then
      oci_image "$bin" "$repository/$cmd:$version" "$bin.oci.tar" 65532:65532 ko-app "$zoneinfo"
    fi
  done
}
