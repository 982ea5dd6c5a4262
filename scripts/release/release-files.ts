/**
 * The text files of a release directory, from plain data: the release notes (CHANGELOG.md's
 * section of the version, and the images with their digests), the images list the push script
 * reads, the push script itself, and the checksums file. Pure; `release.ts` writes them.
 */

/** One image of a release. */
export interface ReleaseImage {
  /** Its archive's name under `images/`, e.g. `appmonitor-memory-scaler.oci.tar`. */
  readonly archive: string;
  /** Its repository under the registry, e.g. `appmonitor-memory-scaler`. */
  readonly name: string;
  readonly tag: string;
  /** The manifest digest, `sha256:…`, the same in the archive and in every registry it is pushed to by `push-images.sh`. */
  readonly digest: string;
  /** What it is, for the notes. */
  readonly what: string;
}

/** The registry the release's manifests and chart name, until a user sets theirs. */
export const RELEASE_REGISTRY = "ghcr.io/kubedemo";

/**
 * CHANGELOG.md's section for `version` (`## <version>` to the next `## `), without its heading.
 * @throws Error when CHANGELOG.md has no such section, or it is empty.
 */
export function changelogSection(changelog: string, version: string): string {
  const lines = changelog.split("\n");
  const start = lines.findIndex((l) => l.trim() === `## ${version}`);
  if (start < 0) throw new Error(`CHANGELOG.md has no section "## ${version}" (package.json's version): write the release's notes there first`);
  const end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  const body = lines.slice(start + 1, end < 0 ? undefined : end).join("\n").trim();
  if (body === "") throw new Error(`CHANGELOG.md's section "## ${version}" is empty`);
  return body;
}

/** `images.txt`: one line per image, `<archive> <name> <tag> <digest>`, which push-images.sh reads. */
export function imagesList(images: readonly ReleaseImage[]): string {
  return `${images.map((i) => `${i.archive} ${i.name} ${i.tag} ${i.digest}`).join("\n")}\n`;
}

/** The release notes: CHANGELOG.md's section, then the images and the commands that install the release. */
export function releaseNotes(version: string, section: string, images: readonly ReleaseImage[]): string {
  return [
    `# appmonitor ${version}`,
    "",
    section,
    "",
    "## Images",
    "",
    `Each is in \`images/\` as an OCI archive; the manifests and the chart name them under \`${RELEASE_REGISTRY}\` by tag and digest.`,
    "",
    "| image | tag | digest | what |",
    "| --- | --- | --- | --- |",
    ...images.map((i) => `| \`${i.name}\` | \`${i.tag}\` | \`${i.digest}\` | ${i.what} |`),
    "",
    "## Install",
    "",
    "```sh",
    "sha256sum -c SHA256SUMS",
    "./push-images.sh registry.example.com/team          # skopeo, podman or docker; digests kept",
    `helm install appmonitor ./appmonitor-${version}.tgz -n appmonitor --create-namespace \\`,
    "  --set image.registry=registry.example.com/team --set profile=eventing-only   # or serving",
    "```",
    "",
    `Without Helm: \`sed 's|${RELEASE_REGISTRY}/|registry.example.com/team/|' manifests/appmonitor-eventing-only.yaml | kubectl apply -f -\``,
    "(or `appmonitor-serving.yaml`), after creating the Secret `appmonitor-webhook` (docs/install.md).",
    "",
  ].join("\n");
}

/** `SHA256SUMS`: `sha256sum -c` input, one `<hex>  <path>` line per file, sorted by path. */
export function checksums(files: readonly { path: string; sha256: string }[]): string {
  return `${[...files].sort((a, b) => a.path.localeCompare(b.path)).map((f) => `${f.sha256}  ${f.path}`).join("\n")}\n`;
}

/**
 * `push-images.sh`: pushes every archive of `images.txt` to `REGISTRY/<name>:<tag>` and checks that
 * the registry holds it under the release's digest (the manifests and the chart pin it), with
 * skopeo (`--preserve-digests`) when it is there, else podman, else docker (with the containerd
 * image store, which pushes an image's manifest as loaded; the classic store recompresses the
 * layers, which changes the digest, and the check says so). `PUSH_TOOL` picks one;
 * `TLS_VERIFY=false` allows a plain-HTTP registry.
 */
export const PUSH_SCRIPT = `#!/bin/sh
# Pushes this release's images to a registry of yours, keeping their digests, which the release's
# manifests and chart pin:   ./push-images.sh REGISTRY      (e.g. registry.example.com/team)
# Then: helm install ... --set image.registry=REGISTRY (RELEASE-NOTES.md). Uses skopeo when it is
# installed, else podman, else docker; PUSH_TOOL=skopeo|podman|docker picks one, TLS_VERIFY=false
# allows a registry without TLS. Exit 1 when a push fails or the registry holds another digest.
set -eu
cd "$(dirname "$0")"
registry=\${1:?usage: ./push-images.sh REGISTRY   (e.g. registry.example.com/team)}
registry=\${registry%/}
tool=\${PUSH_TOOL:-}
if [ -z "$tool" ]; then
  for t in skopeo podman docker; do
    if command -v "$t" >/dev/null 2>&1; then tool=$t; break; fi
  done
fi
[ -n "$tool" ] || { echo "push-images: none of skopeo, podman or docker is installed" >&2; exit 1; }
verify=\${TLS_VERIFY:-true}
while read -r archive name tag digest; do
  ref="$registry/$name:$tag"
  case $tool in
    skopeo)
      skopeo copy --quiet --preserve-digests --dest-tls-verify="$verify" "oci-archive:images/$archive" "docker://$ref"
      pushed=$(skopeo inspect --tls-verify="$verify" --format '{{.Digest}}' "docker://$ref") ;;
    podman)
      loaded=$(podman load -q -i "images/$archive" | sed -n 's/^Loaded image[^:]*: //p' | tail -n 1)
      podman tag "$loaded" "$ref"
      podman push --quiet --tls-verify="$verify" --digestfile "images/.$name.digest" "$ref"
      pushed=$(cat "images/.$name.digest"); rm -f "images/.$name.digest" ;;
    docker)
      loaded=$(docker load -q -i "images/$archive" | sed -n 's/^Loaded image[^:]*: //p' | tail -n 1)
      docker tag "$loaded" "$ref"
      pushed=$(docker push "$ref" | sed -n 's/.*digest: \\(sha256:[0-9a-f]*\\).*/\\1/p' | tail -n 1) ;;
    *) echo "push-images: PUSH_TOOL must be skopeo, podman or docker, not $tool" >&2; exit 1 ;;
  esac
  if [ "$pushed" != "$digest" ]; then
    echo "push-images: $ref is $pushed in the registry, not $digest as the release pins it; $tool changed the image (recompressed its layers?): push with skopeo instead" >&2
    exit 1
  fi
  echo "$ref@$digest"
done < images.txt
`;
