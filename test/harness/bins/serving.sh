# Sourced by build.sh (uses its $here, $out and build_set). Knative Serving, all but the ingress,
# from the pinned module in serving/: the commands of its go.mod tool block (controller, webhook,
# autoscaler, activator, and queue, the queue-proxy sidecar), built into knative-serving/ (their own
# names would be ambiguous beside the kube and Eventing binaries), and one image per command,
# knative-serving/<binary>.oci.tar, named localhost/appmonitor/knative-serving/<path under cmd/>:<serving version>,
# the name the rendered install (test/harness/stack/serving-manifests.ts) puts where Serving's YAML says ko://.
serving_out="$out/knative-serving"
mkdir -p "$serving_out"
BUILD_OUT="$serving_out" build_set serving "" tool
! wanted serving || ko_images "$here/serving" knative.dev/serving "$serving_out" localhost/appmonitor/knative-serving
