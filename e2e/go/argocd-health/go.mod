module example.invalid/airunway-e2e-argocd-health

go 1.26.0

require github.com/yuin/gopher-lua v1.1.1
