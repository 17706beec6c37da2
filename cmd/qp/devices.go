package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
)

func init() {
	c := command{name: "devices", args: "", summary: "list the CUDA GPUs, or say why the CPU backend is used"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Lists every CUDA GPU the NVIDIA driver reports: name, memory, SM count,
compute capability, L2 size, and whether qp's kernels (built for compute
capability 8.0 and newer) can run on it. Without a usable driver or GPU it
prints the reason and that the CPU backend is used; that is not an error.
With --check it also opens each usable GPU and loads the embedded kernels.`)
		checkKernels := fs.Bool("check", false, "open each usable GPU and load the embedded kernels")
		if _, err := parseArgs(fs, args, 0); err != nil {
			return err
		}
		devs, err := cuda.Devices()
		if err != nil {
			fmt.Println(err) // the reason, e.g. no driver; ends "using the CPU backend"
			return nil
		}
		ver, _ := cuda.DriverVersion()
		fmt.Printf("NVIDIA driver supports CUDA %d.%d; %d GPU(s)\n", ver/1000, ver%1000/10, len(devs))
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GPU\tname\tmemory\tSMs\tcompute\tL2\tPCI\tusable")
		for _, d := range devs {
			usable := "yes"
			if ok, why := d.Usable(); !ok {
				usable = "no: " + why
			}
			fmt.Fprintf(tw, "%d\t%s\t%.1f GiB\t%d\t%d.%d\t%.0f MiB\t%s\t%s\n", d.Ordinal, d.Name,
				float64(d.TotalMemory)/(1<<30), d.SMs, d.Major, d.Minor, float64(d.L2Bytes)/(1<<20), d.PCIBusID, usable)
		}
		tw.Flush()
		if ok, why := cuda.Available(); !ok {
			fmt.Println(why)
			return nil
		}
		if !*checkKernels {
			return nil
		}
		for _, d := range devs {
			if ok, _ := d.Usable(); !ok {
				continue
			}
			if err := checkDevice(d.Ordinal); err != nil {
				return fmt.Errorf("GPU %d: %w", d.Ordinal, err)
			}
		}
		return nil
	}
	register(c)
}

// checkDevice opens GPU ordinal, loads the embedded kernels and prints their
// resource use.
func checkDevice(ordinal int) (err error) {
	ctx, err := cuda.Open(ordinal)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := ctx.Close(); err == nil {
			err = cerr
		}
	}()
	k, err := kern.Load(ctx)
	if err != nil {
		return err
	}
	for _, f := range k.Functions() {
		a, err := f.Attrs()
		if err != nil {
			return err
		}
		fmt.Printf("GPU %d: kernel %s loaded: %d registers, %d B static shared memory, %d B local memory per thread\n",
			ordinal, f.Name(), a.Registers, a.StaticSharedBytes, a.LocalBytes)
	}
	return nil
}
