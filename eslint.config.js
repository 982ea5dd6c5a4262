// Lint rules: typescript-eslint's recommended set over all project TypeScript, the import rules
// that keep memory-scaler's folders apart (functions/memory-scaler/README.md, "Layout"), and the
// ones that keep the product (scripts/, functions/) from importing its tests.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const MS = "functions/memory-scaler";

// Only kube/ talks to the API server: elsewhere @kubernetes/client-node is a source of types.
const clientValues = {
  name: "@kubernetes/client-node",
  allowTypeImports: true,
  message: `only ${MS}/kube/ imports @kubernetes/client-node as a value (it alone does I/O); use \`import type\` here`,
};

/**
 * `@typescript-eslint/no-restricted-imports` for `files`: the client's values, and `patterns` (each a
 * regex over the import specifier, with why, and whether `import type` of it is allowed).
 */
const imports = (files, patterns = [], more = {}) => ({
  files,
  ...more,
  rules: {
    "@typescript-eslint/no-restricted-imports": [
      "error",
      { paths: files[0].startsWith(MS) ? [clientValues] : [], patterns: patterns.map(([regex, message, allowTypeImports = false]) => ({ regex, message, allowTypeImports })) },
    ],
  },
});

const scaleApart = ["(^|/)follow-up/", "scale/ (one alert → at most one write) and follow-up/ (each tick) never import each other: share through model.ts, status/ or a top-level module"];

export default tseslint.config(
  { ignores: ["node_modules/", ".stack/", "**/*.generated.*", "schemas/validators/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-non-null-assertion": "error",
    },
  },
  // Later entries replace earlier ones for the files they match, so each folder's entry repeats the client rule.
  imports([`${MS}/**/*.ts`], [], { ignores: [`${MS}/kube/**`] }),
  imports([`${MS}/scale/**/*.ts`], [scaleApart]),
  // The rules decide from plain data: no target, no step of the flow, no adapter (its types, such as a view, may be named).
  imports([`${MS}/scale/decide/**/*.ts`], [
    scaleApart,
    ["^\\.\\./(targets|triggers)/|^\\.\\./(flow|observe|report|deps)\\.ts$", "scale/decide/ is the pure rules: targets/, triggers/ and the flow build on it, never the reverse"],
    ["(^|/)kube/", "scale/decide/ is pure: it reads plain data and does no I/O (import type of a view is fine)", true],
  ]),
  imports([`${MS}/follow-up/**/*.ts`], [["(^|/)scale/", "follow-up/ (each tick) and scale/ (one alert → at most one write) never import each other: share through model.ts, status/ or a top-level module"]]),
  imports(
    [`${MS}/status/**/*.ts`, `${MS}/coexist/**/*.ts`],
    [["^\\.\\./(?!model\\.ts$|\\.\\./lib/)", "status/ and coexist/ are pure and low: they import only ../model.ts, ../../lib/ and their own folder"]],
  ),
  // The core rule, so the entries above (same files, the typescript-eslint rule) do not replace it.
  {
    files: ["scripts/**/*.ts", "functions/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "(^|/)test/", message: "scripts/ (what users run) and functions/ import nothing from test/: move what both need under scripts/ (or functions/lib/); test/ imports it from there" }] }],
    },
  },
  imports(["test/harness/**/*.ts"], [["(^|/)support/", "test/harness/ (the local stack, the demo, images) never imports test/support/ (the tests' helpers): move what both need into test/harness/lib/"]]),
);
