package standin

import "github.com/openctl/openctl/internal/k3semu"

// osFS is the stand-in's file system: the machine's own, as k3s sees it.
var osFS k3semu.OSFS
