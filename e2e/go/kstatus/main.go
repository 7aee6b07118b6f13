// Command kstatus prints what sigs.k8s.io/cli-utils/pkg/kstatus (the status library Flux and
// other GitOps tools use) computes for Kubernetes objects.
//
// Input on stdin: a JSON array of objects (or one object). Output on stdout: a JSON array with,
// for each object in order, {"name", "status", "message"}; status is one of InProgress, Failed,
// Current, Terminating, NotFound, Unknown. Used by e2e/tests/gitops.rs.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type result struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var objects []json.RawMessage
	if trimmed := bytes.TrimSpace(input); len(trimmed) > 0 && trimmed[0] == '{' {
		objects = append(objects, trimmed)
	} else if err := json.Unmarshal(input, &objects); err != nil {
		fail("parsing the objects (a JSON array): %v", err)
	}
	results := make([]result, 0, len(objects))
	for i, object := range objects {
		// As the API machinery reads objects (integers stay int64, as kstatus expects).
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(object); err != nil {
			fail("parsing object %d: %v", i, err)
		}
		computed, err := status.Compute(u)
		if err != nil {
			fail("kstatus of %s: %v", u.GetName(), err)
		}
		results = append(results, result{Name: u.GetName(), Status: computed.Status.String(), Message: computed.Message})
	}
	out, err := json.Marshal(results)
	if err != nil {
		fail("encoding: %v", err)
	}
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(2)
}
