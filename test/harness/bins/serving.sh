# Sourced by build.sh (uses its $here, $out and build_set). Knative Serving, all but the ingress,
# from the pinned module in serving/: the commands of its go.mod tool block (controller, webhook,
# autoscaler, activator, and queue, the queue-proxy sidecar), built into knative-serving/ (their own
# names would be ambiguous beside the kube and Eventing binaries), and one image per command,
# knative-serving/<binary>.oci.tar, named localhost/appmonitor/knative-serving/<path under cmd/>:<serving version>,
# the name the rendered install (test/harness/stack/serving-manifests.ts) puts where Serving's YAML says ko://.
serving_out="$out/knative-serving"
mkdir -p "$serving_out"
BUILD_OUT="$serving_out" build_set serving "" tool
serving_version=$(cd "$here/serving" && go list -m -f '{{.Version}}' knative.dev/serving)
for pkg in $(cd "$here/serving" && go list tool); do
  cmd=${pkg#knative.dev/serving/cmd/}
  bin="$serving_out/$(basename "$cmd")"
  if [ ! "$bin.oci.tar" -nt "$bin" ] || [ ! "$bin.oci.tar" -nt "$here/oci-image.sh" ]; then
    # As ko lays it out (/ko-app/<binary>, user 65532), as for Eventing's images.
    oci_image "$bin" "localhost/appmonitor/knative-serving/$cmd:$serving_version" "$bin.oci.tar" 65532:65532 ko-app
  fi
done
