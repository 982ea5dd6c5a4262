// Package crds is never built into anything: its import keeps the API types that controller-gen
// reads in this module's requirements, at the version go.mod pins.
package crds

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
