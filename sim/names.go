package sim

import (
	"fmt"
	"strings"
)

// mix is splitmix64's finaliser: a cheap, well-spread hash used for every
// name and id, so names depend only on the seed and what they name.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashStr hashes a seed and some strings (FNV-1a folded through mix).
func hashStr(seed int64, parts ...string) uint64 {
	h := uint64(14695981039346656037) ^ uint64(seed)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return mix(h)
}

// kubeAlphabet is the alphabet Kubernetes uses for generated name suffixes
// (no vowels, no look-alike digits).
const kubeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// kubeSuffix renders n characters of kubeAlphabet from h.
func kubeSuffix(h uint64, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i%12 == 11 {
			h = mix(h)
		}
		b.WriteByte(kubeAlphabet[h%uint64(len(kubeAlphabet))])
		h /= uint64(len(kubeAlphabet))
	}
	return b.String()
}

// replicaSetName is a deployment's ReplicaSet for one pod template
// (model + version), like "chat-8b-7d9f8c6b5x".
func replicaSetName(seed int64, model, version string) string {
	return model + "-" + kubeSuffix(hashStr(seed, "rs", model, version), 10)
}

// podName is a pod of a ReplicaSet, like "chat-8b-7d9f8c6b5x-q2m4z"; n makes
// successive pods of the same ReplicaSet distinct.
func podName(seed int64, rs string, n int) string {
	return rs + "-" + kubeSuffix(hashStr(seed, "pod", rs, fmt.Sprint(n)), 5)
}

// gpuUUID is a stable DCGM-style UUID for one GPU of one node.
func gpuUUID(seed int64, node string, gpu int) string {
	a := hashStr(seed, "gpu", node, fmt.Sprint(gpu))
	b := mix(a)
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a), uint16(b>>48), b&0xffffffffffff)
}

// version renders a semantic version.
func version(major, minor, patch int) string {
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch)
}

// shortID renders 8 hex digits of a hash, for event ids.
func shortID(h uint64) string { return fmt.Sprintf("%08x", uint32(h)) }
