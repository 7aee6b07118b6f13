// Command argocd-health runs an Argo CD resource health check (a `health.lua`) the way Argo CD's
// application controller runs a health script from argocd-cm: in gopher-lua, the Lua
// implementation Argo CD embeds, with only the libraries Argo CD opens for such scripts
// (package, base and table; not string, math, io or os), a one-second time limit per object, the
// object handed over as the global `obj` (JSON objects and arrays as tables, numbers as Lua
// numbers, null as nil), and the returned table read as {status, message}, where a status
// outside Argo CD's set (Healthy, Progressing, Degraded, Suspended, Missing, Unknown) becomes
// Unknown with Argo CD's message for it.
//
// Usage: argocd-health SCRIPT.lua < objects.json
//
// Input on stdin: a JSON array of objects. Output on stdout: a JSON array with, for each object
// in order, {"status", "message"}. A script error (syntax, runtime, time limit, a return value
// that is not a table) ends the program with a non-zero exit and the error on stderr. Used by
// e2e/tests/gitops.rs.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// What Argo CD accepts as a health status.
var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true,
	"Suspended": true, "Missing": true, "Unknown": true,
}

// Argo CD's message when a script returns a status outside validStatus.
const invalidStatusMessage = "Lua returned an invalid health status"

type result struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: argocd-health SCRIPT.lua < objects.json")
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("reading the script: %v", err)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var objects []map[string]interface{}
	if err := json.Unmarshal(input, &objects); err != nil {
		fail("parsing the objects (a JSON array of objects): %v", err)
	}
	results := make([]result, 0, len(objects))
	for i, object := range objects {
		r, err := health(string(script), object)
		if err != nil {
			fail("object %d: %v", i, err)
		}
		results = append(results, r)
	}
	out, err := json.Marshal(results)
	if err != nil {
		fail("encoding the results: %v", err)
	}
	fmt.Println(string(out))
}

// health runs the script on one object in a fresh interpreter.
func health(script string, object map[string]interface{}) (result, error) {
	state := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer state.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := state.CallByParam(lua.P{Fn: state.NewFunction(lib.open), NRet: 0, Protect: true},
			lua.LString(lib.name)); err != nil {
			return result{}, fmt.Errorf("opening the %q library: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	state.SetContext(ctx)
	state.SetGlobal("obj", toLua(state, object))
	if err := state.DoString(script); err != nil {
		return result{}, err
	}
	returned, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		return result{}, fmt.Errorf("expect table output from Lua script, not %s", state.Get(-1).Type())
	}
	r := result{Status: field(returned, "status"), Message: field(returned, "message")}
	if !validStatus[r.Status] {
		return result{Status: "Unknown", Message: invalidStatusMessage}, nil
	}
	return r, nil
}

// field is a string field of a returned table ("" when absent or not a string).
func field(table *lua.LTable, name string) string {
	if s, ok := table.RawGetString(name).(lua.LString); ok {
		return string(s)
	}
	return ""
}

// toLua converts a decoded JSON value to a Lua value.
func toLua(state *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []interface{}:
		array := state.CreateTable(len(v), 0)
		for _, item := range v {
			array.Append(toLua(state, item))
		}
		return array
	case map[string]interface{}:
		table := state.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), toLua(state, item))
		}
		return table
	default:
		return lua.LNil
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "argocd-health: "+format+"\n", args...)
	os.Exit(1)
}
