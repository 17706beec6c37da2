package cuda

import (
	"errors"
	"fmt"
	"strings"
)

// MinComputeCapability is the oldest GPU architecture the embedded fatbin
// runs on: it holds sm_80 and sm_90 code (sm_80 code runs on every 8.x GPU)
// and compute_90 PTX, which the driver compiles for GPUs newer than 9.0.
const MinComputeCapability = 80

// Device describes one CUDA GPU.
type Device struct {
	Ordinal     int    // CUDA device ordinal (cuDeviceGet)
	Name        string // e.g. "NVIDIA H100 80GB HBM3"
	TotalMemory uint64 // bytes of device memory
	SMs         int    // streaming multiprocessors
	Major       int    // compute capability major version
	Minor       int    // compute capability minor version
	L2Bytes     int    // L2 cache size
	ClockKHz    int    // typical SM clock
	MemClockKHz int    // peak memory clock
	BusWidth    int    // memory bus width in bits
	PCIBusID    string // "domain:bus:device", e.g. "0000:17:00"
}

// ComputeCapability returns 10*Major + Minor, e.g. 90 for sm_90.
func (d Device) ComputeCapability() int { return 10*d.Major + d.Minor }

// Usable reports whether the embedded kernels can run on d, and why not.
func (d Device) Usable() (bool, string) {
	if d.ComputeCapability() < MinComputeCapability {
		return false, fmt.Sprintf("compute capability %d.%d is below %d.%d, the oldest the kernels are built for",
			d.Major, d.Minor, MinComputeCapability/10, MinComputeCapability%10)
	}
	return true, ""
}

// String is a one-line summary, e.g.
// "0: NVIDIA H100 80GB HBM3, 79.1 GiB, 132 SMs, compute capability 9.0, L2 50.0 MiB".
func (d Device) String() string {
	return fmt.Sprintf("%d: %s, %.1f GiB, %d SMs, compute capability %d.%d, L2 %.1f MiB",
		d.Ordinal, d.Name, float64(d.TotalMemory)/(1<<30), d.SMs, d.Major, d.Minor, float64(d.L2Bytes)/(1<<20))
}

// CUdevice_attribute values (cuda.h).
const (
	attrClockRate       = 13
	attrSMCount         = 16
	attrPCIBusID        = 33
	attrPCIDeviceID     = 34
	attrMemoryClockRate = 36
	attrGlobalMemoryBus = 37
	attrL2CacheSize     = 38
	attrPCIDomainID     = 50
	attrComputeCapMajor = 75
	attrComputeCapMinor = 76
)

// Devices lists every CUDA GPU the driver sees, usable or not. The error
// wraps ErrUnavailable when there is no driver (or it cannot initialize);
// its text is the human reason.
func Devices() ([]Device, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n int32
	if err := check("cuDeviceGetCount", drv.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	out := make([]Device, 0, n)
	for i := 0; i < int(n); i++ {
		d, err := deviceInfo(i)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// deviceInfo queries ordinal i. The calls need no context.
func deviceInfo(i int) (Device, error) {
	var dev int32
	if err := check("cuDeviceGet", drv.cuDeviceGet(&dev, int32(i))); err != nil {
		return Device{}, err
	}
	d := Device{Ordinal: i}
	var name [256]byte
	if err := check("cuDeviceGetName", drv.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return Device{}, err
	}
	d.Name = cString(&name[0], len(name))
	var total uintptr
	if err := check("cuDeviceTotalMem_v2", drv.cuDeviceTotalMem_v2(&total, dev)); err != nil {
		return Device{}, err
	}
	d.TotalMemory = uint64(total)
	var domain, bus, slot int
	for _, a := range []struct {
		attr int32
		dst  *int
	}{
		{attrSMCount, &d.SMs},
		{attrComputeCapMajor, &d.Major},
		{attrComputeCapMinor, &d.Minor},
		{attrL2CacheSize, &d.L2Bytes},
		{attrClockRate, &d.ClockKHz},
		{attrMemoryClockRate, &d.MemClockKHz},
		{attrGlobalMemoryBus, &d.BusWidth},
		{attrPCIDomainID, &domain},
		{attrPCIBusID, &bus},
		{attrPCIDeviceID, &slot},
	} {
		var v int32
		if err := check("cuDeviceGetAttribute", drv.cuDeviceGetAttribute(&v, a.attr, dev)); err != nil {
			return Device{}, fmt.Errorf("device %d attribute %d: %w", i, a.attr, err)
		}
		*a.dst = int(v)
	}
	d.PCIBusID = fmt.Sprintf("%04x:%02x:%02x", domain, bus, slot)
	return d, nil
}

// Available reports whether at least one GPU can run the kernels, and
// otherwise a human reason that names the CPU fallback, e.g.
// "libcuda.so.1 not found: no NVIDIA driver; using the CPU backend".
// It loads the driver on first use and never panics.
func Available() (bool, string) {
	devs, err := Devices()
	if err != nil {
		var ue *unavailableError
		if errors.As(err, &ue) {
			return false, ue.reason
		}
		return false, "CUDA device query failed: " + err.Error() + "; using the CPU backend"
	}
	if len(devs) == 0 {
		return false, "NVIDIA driver found but it reports no CUDA GPU; using the CPU backend"
	}
	var why []string
	for _, d := range devs {
		ok, reason := d.Usable()
		if ok {
			return true, ""
		}
		why = append(why, fmt.Sprintf("GPU %d (%s): %s", d.Ordinal, d.Name, reason))
	}
	return false, strings.Join(why, "; ") + "; using the CPU backend"
}
