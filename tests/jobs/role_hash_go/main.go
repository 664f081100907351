// Prints upstream Kueue's role hash for pod specs, to derive tests/jobs/test_role_hash_key_order.py's
// expected values: `go run . v < specs.jsonl` (one PodSpec as JSON a line; with an argument it also
// prints the JSON hashed). SpecShape and GenerateRoleHash are copied from upstream v0.18's
// pkg/util/pod; each spec first goes through the API server's round trip (marshal, unmarshal).
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
)

func containersShape(containers []corev1.Container) (result []map[string]interface{}) {
	for _, c := range containers {
		result = append(result, map[string]interface{}{
			"resources": map[string]interface{}{"requests": c.Resources.Requests},
			"ports":     c.Ports,
		})
	}
	return result
}

func specShape(s *corev1.PodSpec) map[string]interface{} {
	return map[string]interface{}{
		"initContainers":            containersShape(s.InitContainers),
		"containers":                containersShape(s.Containers),
		"nodeSelector":              s.NodeSelector,
		"affinity":                  s.Affinity,
		"tolerations":               s.Tolerations,
		"runtimeClassName":          s.RuntimeClassName,
		"priority":                  s.Priority,
		"topologySpreadConstraints": s.TopologySpreadConstraints,
		"overhead":                  s.Overhead,
		"resourceClaims":            s.ResourceClaims,
	}
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var spec corev1.PodSpec
		if err := json.Unmarshal(sc.Bytes(), &spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// the API server's round trip: what it stores is what Kueue reads (empty omitempty lists and maps dropped)
		stored, err := json.Marshal(&spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		spec = corev1.PodSpec{}
		if err := json.Unmarshal(stored, &spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out, err := json.Marshal(map[string]interface{}{"spec": specShape(&spec)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if len(os.Args) > 1 {
			fmt.Println(string(out))
		}
		fmt.Printf("%x\n", sha256.Sum256(out))
	}
}
