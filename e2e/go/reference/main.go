// Command reference prints what github.com/distribution/reference (the image-reference grammar
// container runtimes apply to a Pod's image) makes of strings.
//
// Input on stdin: a JSON array of strings. Output on stdout: a JSON array with, for each string
// in order, {"ok", "domain", "path", "tag", "digest", "error"} from ParseNormalizedNamed (the
// parse the kubelet's image-name parsing and containerd's CRI do). Used by
// e2e/tests/webhooks.rs to check airunway_api::image_reference against it.
package main

import (
	// go-digest verifies only the algorithms whose hash is linked in; runtimes link these.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/distribution/reference"
)

type result struct {
	OK     bool   `json:"ok"`
	Domain string `json:"domain,omitempty"`
	Path   string `json:"path,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var references []string
	if err := json.Unmarshal(input, &references); err != nil {
		fail("parsing the input (a JSON array of strings): %v", err)
	}
	results := make([]result, 0, len(references))
	for _, s := range references {
		named, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			results = append(results, result{Error: err.Error()})
			continue
		}
		r := result{OK: true, Domain: reference.Domain(named), Path: reference.Path(named)}
		if tagged, ok := named.(reference.Tagged); ok {
			r.Tag = tagged.Tag()
		}
		if digested, ok := named.(reference.Digested); ok {
			r.Digest = digested.Digest().String()
		}
		results = append(results, r)
	}
	out, err := json.Marshal(results)
	if err != nil {
		fail("encoding: %v", err)
	}
	os.Stdout.Write(append(out, '\n'))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "reference: "+format+"\n", args...)
	os.Exit(2)
}
