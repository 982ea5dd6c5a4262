# Sourced by build.sh (uses its $here, $out and build_set). Knative Eventing from the pinned
# module in eventing/: the commands of its go.mod tool block, built into knative-eventing/ (their
# own names, such as controller and webhook, would be ambiguous beside the kube binaries), and one
# image per command, knative-eventing/<binary>.oci.tar, named
# localhost/appmonitor/knative-eventing/<path under cmd/>:<eventing version>, the name the
# rendered install (test/harness/stack/eventing-manifests.ts) puts where Eventing's YAML says ko://, or,
# for event_display (Knative's event logger, which no install file names: the tests' observer of
# the Broker, test/support/event-display.ts), the name eventingImage gives it
# (test/harness/stack/eventing-manifests.ts).
# A PingSource's `timezone` needs the zone database, which the upstream base image carries and FROM
# scratch does not: each image carries Go's own (lib/time/zoneinfo.zip, what -tags=timetzdata would
# embed). Not the tag: it changes package time, so no compiled package would be shared with the
# other sets (about 580 more package builds from an empty Go build cache).
eventing_out="$out/knative-eventing"
mkdir -p "$eventing_out"
BUILD_OUT="$eventing_out" build_set eventing "" tool
! wanted eventing || ko_images "$here/eventing" knative.dev/eventing "$eventing_out" localhost/appmonitor/knative-eventing "$(go env GOROOT)/lib/time/zoneinfo.zip"
