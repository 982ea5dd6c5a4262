/**
 * The stack's PKI, made with openssl: a CA, the kube-apiserver serving certificate for
 * 127.0.0.1/localhost, the real node's IP (where Pods reach it) and the names and ClusterIP of the
 * `kubernetes` Service (what in-cluster clients dial), an admin client certificate (group `system:masters`), and the key pair
 * that signs ServiceAccount tokens. EC P-256 keys: fast to make, accepted by every component.
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { KUBERNETES_SERVICE_IP, REAL_NODE } from "./real-node-config.ts";

const run = promisify(execFile);

/** File paths of the generated PKI (PEM). */
export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run("openssl", args, { cwd });
  } catch (error) {
    throw new StepError("generate certificates", `openssl ${args[0]} failed: ${(error as { stderr?: string }).stderr ?? error}`, { cause: error });
  }
}

const clientExtensions = "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n";

async function signedCert(dir: string, name: string, subject: string, extensions: string, ca = "ca"): Promise<void> {
  await openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject], dir);
  await writeFile(path.join(dir, `${name}.ext`), extensions);
  await openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial",
    "-out", `${name}.crt`, "-days", "30", "-extfile", `${name}.ext`], dir);
}

/** The real node's certificates, signed by the stack's CA (PEM file paths). */
export interface NodePki {
  /** The kubelet's client certificate: user `system:node:<node>`, group `system:nodes`. */
  kubeletClientCert: string;
  kubeletClientKey: string;
  /** The kubelet's serving certificate for the node IP, 127.0.0.1 and the node name. */
  kubeletServingCert: string;
  kubeletServingKey: string;
  /** kube-apiserver's client certificate towards kubelets (group `system:masters`). */
  apiserverKubeletClientCert: string;
  apiserverKubeletClientKey: string;
  /** kube-proxy's client certificate: user `system:kube-proxy`, which Kubernetes' default binding `system:node-proxier` grants its rights. */
  kubeProxyClientCert: string;
  kubeProxyClientKey: string;
  /** CoreDNS's client certificate: user `appmonitor:coredns` (its ClusterRole is bound by the real node's start). */
  corednsClientCert: string;
  corednsClientKey: string;
  /**
   * The aggregation layer's front proxy (as kubeadm makes it): a CA of its own, which the API
   * server trusts for request headers alone, and the API server's client certificate towards
   * extension API servers (metrics-server), CN `front-proxy-client`.
   */
  frontProxyCaCert: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
}

/** The CN of the front proxy's client certificate, the one name the API server's `--requestheader-allowed-names` lets through. */
export const FRONT_PROXY_CLIENT = "front-proxy-client";

/**
 * Writes the real node's certificates into `dir`, beside the CA that {@link generatePki} made there.
 * @throws StepError when openssl fails.
 */
export async function generateNodePki(dir: string, node: { name: string; ip: string }): Promise<NodePki> {
  await signedCert(dir, "kubelet-client", `/O=system:nodes/CN=system:node:${node.name}`, clientExtensions);
  await signedCert(dir, "kubelet-serving", `/CN=${node.name}`,
    `subjectAltName=IP:${node.ip},IP:127.0.0.1,DNS:${node.name}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`);
  await signedCert(dir, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client", clientExtensions);
  await signedCert(dir, "kube-proxy-client", "/CN=system:kube-proxy", clientExtensions);
  await signedCert(dir, "coredns-client", "/CN=appmonitor:coredns", clientExtensions);
  await openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", "front-proxy-ca.key", "-out", "front-proxy-ca.crt", "-days", "30", "-subj", "/CN=appmonitor-front-proxy-ca"], dir);
  await signedCert(dir, "front-proxy-client", `/CN=${FRONT_PROXY_CLIENT}`, clientExtensions, "front-proxy-ca");
  const p = (f: string) => path.join(dir, f);
  return {
    kubeletClientCert: p("kubelet-client.crt"), kubeletClientKey: p("kubelet-client.key"),
    kubeletServingCert: p("kubelet-serving.crt"), kubeletServingKey: p("kubelet-serving.key"),
    apiserverKubeletClientCert: p("apiserver-kubelet-client.crt"), apiserverKubeletClientKey: p("apiserver-kubelet-client.key"),
    kubeProxyClientCert: p("kube-proxy-client.crt"), kubeProxyClientKey: p("kube-proxy-client.key"),
    corednsClientCert: p("coredns-client.crt"), corednsClientKey: p("coredns-client.key"),
    frontProxyCaCert: p("front-proxy-ca.crt"), frontProxyClientCert: p("front-proxy-client.crt"), frontProxyClientKey: p("front-proxy-client.key"),
  };
}

/**
 * Writes a fresh PKI into `dir` (created if missing).
 * @throws StepError when openssl is missing or fails.
 */
export async function generatePki(dir: string): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  await openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", "ca.key", "-out", "ca.crt", "-days", "30", "-subj", "/CN=appmonitor-stack-ca"], dir);
  await signedCert(dir, "apiserver", "/CN=kube-apiserver",
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc," +
      `DNS:kubernetes.default.svc.cluster.local,IP:${KUBERNETES_SERVICE_IP},IP:${REAL_NODE.nodeIp}\n` +
      "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n");
  await signedCert(dir, "admin", "/O=system:masters/CN=appmonitor-admin", clientExtensions);
  await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key"], dir);
  await openssl(["ec", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  const p = (f: string) => path.join(dir, f);
  return {
    caCert: p("ca.crt"), caKey: p("ca.key"),
    servingCert: p("apiserver.crt"), servingKey: p("apiserver.key"),
    adminCert: p("admin.crt"), adminKey: p("admin.key"),
    serviceAccountKey: p("sa.key"), serviceAccountPub: p("sa.pub"),
  };
}
