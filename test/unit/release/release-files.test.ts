// The release directory's text files from plain data: the notes from CHANGELOG.md's section, the
// images list push-images.sh reads, the checksums sha256sum -c reads, and the push script's shell.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { changelogSection, checksums, imagesList, PUSH_SCRIPT, releaseNotes, type ReleaseImage } from "../../../scripts/release/release-files.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";

const CHANGELOG = "# Changelog\n\nintro\n\n## 0.3.0\n\n- three\n\n## 0.2.0\n\n- two\n- more\n\n## 0.1.0\n\n- one\n";
const image: ReleaseImage = { archive: "appmonitor-rule-sync.oci.tar", name: "appmonitor-rule-sync", tag: "0.2.0", digest: `sha256:${"b".repeat(64)}`, what: "rule-sync" };

test("a version's section runs to the next heading; a missing or empty one is an error naming the version", () => {
  assert.equal(changelogSection(CHANGELOG, "0.2.0"), "- two\n- more");
  assert.equal(changelogSection(CHANGELOG, "0.1.0"), "- one");
  assert.throws(() => changelogSection(CHANGELOG, "0.4.0"), /no section "## 0\.4\.0"/);
  assert.throws(() => changelogSection("## 1.0.0\n\n## 0.9.0\n- x\n", "1.0.0"), /"## 1\.0\.0" is empty/);
});

test("CHANGELOG.md has a section for package.json's version", async () => {
  const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
  assert.ok(changelogSection(await readFile(path.join(repoRoot, "CHANGELOG.md"), "utf8"), version).length > 0);
});

test("the images list is one line per image: archive, name, tag, digest", () => {
  assert.equal(imagesList([image]), `appmonitor-rule-sync.oci.tar appmonitor-rule-sync 0.2.0 ${image.digest}\n`);
});

test("the notes hold the section, each image with its digest, and the install commands", () => {
  const notes = releaseNotes("0.2.0", "- two", [image]);
  assert.match(notes, /^# appmonitor 0\.2\.0\n\n- two\n/);
  assert.ok(notes.includes(`| \`appmonitor-rule-sync\` | \`0.2.0\` | \`${image.digest}\` | rule-sync |`));
  assert.ok(notes.includes("helm install appmonitor ./appmonitor-0.2.0.tgz -n appmonitor --create-namespace"));
});

test("checksums are sha256sum's format, sorted by path", () => {
  assert.equal(checksums([{ path: "b", sha256: "2" }, { path: "a/x", sha256: "1" }]), "1  a/x\n2  b\n");
});

test("the push script is valid POSIX sh and refuses to run without a registry", async () => {
  await promisify(execFile)("sh", ["-n", "-c", PUSH_SCRIPT]);
  await assert.rejects(promisify(execFile)("sh", ["-c", PUSH_SCRIPT]), (error: { stderr?: string }) => /usage: \.\/push-images\.sh REGISTRY/.test(error.stderr ?? ""));
});
