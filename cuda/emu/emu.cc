// emu.cc — a CPU emulator of the subset of the CUDA driver API that package
// cuda binds (cuda/driver.go), built as libcuda.so.1 together with every
// kernel of cuda/kernels/*.cu compiled by g++ (emu.h). With
// LD_LIBRARY_PATH pointing at it, `go test ./cuda/` runs the GPU tests
// against the emulator: the Go plumbing (packing, launches, copies, status
// words) and the kernels' logic (indexing, scans, validation) are checked
// without a GPU. It says nothing about speed, and it cannot find what only
// real hardware shows (memory-model races across warps, register limits):
// the device tests remain the evidence; this catches bugs before spending
// device time on them.
//
// Execution model: "device" memory is host memory (device pointer = host
// address); every call is synchronous (streams and events are bookkeeping;
// an event records the host clock). A launch runs its CTAs one after the
// other; a CTA's threads are coroutines on the calling OS thread, switched
// only inside collectives (shuffles, votes, reductions, warp scans,
// __syncwarp, __syncthreads), so shared memory (__shared__ = static) needs
// no locking. A collective completes when every lane of the warp (thread of
// the CTA), or of its partial mask, has arrived at it; the emulator aborts
// with a diagnostic when lanes meet in collectives of different kinds or
// masks, or when some lanes wait while the others have exited or wait
// elsewhere (divergent collectives, which are undefined behaviour on a GPU).
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <time.h>
#include <ucontext.h>
#include <vector>

#include "emu.h"

namespace emu {

Thread *cur;
dim3 block_idx, block_dim, grid_dim;

namespace {

struct Kernel {
	void *fn;
	Invoker inv;
};

std::map<std::string, Kernel> &registry() {
	static std::map<std::string, Kernel> r;
	return r;
}

constexpr size_t kStack = 256 << 10;

} // namespace

struct CpCopy {
	void *dst;
	const void *src;
	size_t n;
};

struct CpState {
	std::vector<CpCopy> open;
	std::vector<std::vector<CpCopy>> groups;
};

namespace {

struct Coro {
	ucontext_t uc;
	jmp_buf jb;
	bool started = false, done = false;
	char *stack = nullptr;
	Thread t;
	CpState cp;
};

struct Group { // one warp, or the whole CTA
	int members = 0, arrived = 0, kind = 0;
	unsigned mask = 0;
	size_t size = 0;
	unsigned gen = 0;
	std::vector<unsigned char> slots, result;
};

ucontext_t sched_uc;
jmp_buf sched_jb;
std::vector<Coro> coros;
std::vector<Group> warps;
// subs[w][mask]: the collectives of warp w's lanes that name a partial mask
// (groups of lanes that may diverge from the rest of the warp; decode.cuh's
// groups name the whole warp instead, with a shuffle width): each completes
// when every lane of its mask has arrived.
std::vector<std::map<unsigned, Group>> subs;
Group cta;
Coro *running;
unsigned long long progress;
unsigned long long rng = 0x9e3779b97f4a7c15ull;
void *launch_fn;
Invoker launch_inv;
void **launch_params;

[[noreturn]] void fail(const char *what) {
	fprintf(stderr, "cuda emulator: %s (block %u,%u,%u, thread %u)\n", what, block_idx.x, block_idx.y, block_idx.z,
	        cur ? cur->tid.x : 0);
	abort();
}

// yield returns to the scheduler; it resumes the coroutine later.
void yield() {
	if (!_setjmp(running->jb)) _longjmp(sched_jb, 1);
}

void entry() {
	launch_inv(launch_fn, launch_params);
	running->done = true;
	progress++;
	_longjmp(sched_jb, 1);
}

void collective(Group &g, int lane, const void *in, size_t size, void *out, size_t outslots, int kind,
                unsigned mask) {
	if (g.arrived == 0) {
		g.kind = kind;
		g.size = size;
		g.mask = mask;
		g.slots.resize(size * (outslots > static_cast<size_t>(g.members) ? outslots : g.members));
	} else if (g.kind != kind || g.size != size || g.mask != mask) {
		fail("lanes meet in different collectives (divergent warp)");
	}
	if (size) memcpy(g.slots.data() + lane * size, in, size);
	g.arrived++;
	progress++;
	const unsigned gen = g.gen;
	if (g.arrived == g.members) {
		g.result = g.slots;
		g.arrived = 0;
		g.gen++;
	} else {
		while (g.gen == gen) yield();
	}
	if (out && size) memcpy(out, g.result.data(), size * outslots);
}

// run_cta runs one CTA to completion.
void run_cta(unsigned nthreads) {
	if (coros.size() < nthreads) coros.resize(nthreads);
	const unsigned nwarps = (nthreads + 31) / 32;
	warps.assign(nwarps, Group());
	subs.assign(nwarps, std::map<unsigned, Group>());
	for (unsigned w = 0; w < nwarps; w++) warps[w].members = nthreads - 32 * w < 32 ? nthreads - 32 * w : 32;
	cta = Group();
	cta.members = static_cast<int>(nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		Coro &c = coros[i];
		if (!c.stack) c.stack = static_cast<char *>(malloc(kStack));
		c.started = c.done = false;
		c.t.tid = dim3{i % block_dim.x, i / block_dim.x % block_dim.y, i / (block_dim.x * block_dim.y)};
		c.t.lane = static_cast<int>(i % 32);
		c.t.warp = static_cast<int>(i / 32);
		c.cp = CpState();
		c.t.cp = &c.cp;
	}
	// Lanes run one at a time between collectives, in an order shuffled on
	// every pass, so that a lane reading shared memory that another lane
	// writes without a barrier in between sees stale data in some runs.
	std::vector<unsigned> order(nthreads);
	for (unsigned i = 0; i < nthreads; i++) order[i] = i;
	unsigned left = nthreads;
	while (left) {
		const unsigned long long before = progress;
		for (unsigned i = nthreads; i > 1; i--) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			std::swap(order[i - 1], order[(rng >> 33) % i]);
		}
		for (unsigned oi = 0; oi < nthreads; oi++) {
			Coro &c = coros[order[oi]];
			if (c.done) continue;
			running = &c;
			cur = &c.t;
			if (!_setjmp(sched_jb)) {
				if (!c.started) {
					c.started = true;
					getcontext(&c.uc);
					c.uc.uc_stack.ss_sp = c.stack;
					c.uc.uc_stack.ss_size = kStack;
					c.uc.uc_link = nullptr;
					makecontext(&c.uc, entry, 0);
					swapcontext(&sched_uc, &c.uc);
				} else {
					_longjmp(c.jb, 1);
				}
			}
			if (c.done) left--;
		}
		if (left && progress == before) fail("deadlock: lanes wait in a collective that others never reach");
	}
	cur = nullptr;
}

} // namespace

void cp_async(void *dst, const void *src, size_t n) { cur->cp->open.push_back(CpCopy{dst, src, n}); }

void cp_commit() {
	cur->cp->groups.push_back(std::move(cur->cp->open));
	cur->cp->open.clear();
}

void cp_wait(int pending) {
	auto &g = cur->cp->groups;
	while (g.size() > static_cast<size_t>(pending)) {
		for (const CpCopy &c : g.front()) memcpy(c.dst, c.src, c.n);
		g.erase(g.begin());
	}
}

void register_kernel(const char *name, void *fn, Invoker inv) { registry()[name] = Kernel{fn, inv}; }

void warp_gather(const void *in, size_t size, void *all, int kind, unsigned mask) {
	if (mask == 0xffffffffu) {
		collective(warps[cur->warp], cur->lane, in, size, all, 32, kind, mask);
		return;
	}
	if (!(mask >> cur->lane & 1)) fail("a lane calls a collective whose mask leaves it out");
	Group &g = subs[cur->warp][mask];
	if (g.members == 0) g.members = __builtin_popcount(mask);
	collective(g, cur->lane, in, size, all, 32, kind, mask);
}

void block_gather(const void *in, size_t size, void *all, int kind) {
	collective(cta, static_cast<int>(cur->tid.x + block_dim.x * (cur->tid.y + block_dim.y * cur->tid.z)), in, size,
	           all, cta.members, kind, 0);
}

} // namespace emu

// ---- the driver API (the symbols cuda/driver.go binds) ----

namespace {

const std::map<int, const char *> kErrNames = {
    {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {100, "CUDA_ERROR_NO_DEVICE"}, {500, "CUDA_ERROR_NOT_FOUND"}, {999, "CUDA_ERROR_UNKNOWN"},
};

constexpr unsigned long long kTotalMem = 8ull << 30;
unsigned long long used_mem;
std::map<void *, size_t> allocs;
int dummy_ctx, dummy_mod;

double now_ms() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

} // namespace

extern "C" {

int cuInit(unsigned) { return 0; }
int cuDriverGetVersion(int *v) {
	*v = 12000;
	return 0;
}
int cuGetErrorName(int r, const char **s) {
	auto it = kErrNames.find(r);
	if (it == kErrNames.end()) return 1;
	*s = it->second;
	return 0;
}
int cuDeviceGetCount(int *n) {
	*n = 1;
	return 0;
}
int cuDeviceGet(int *d, int ordinal) {
	if (ordinal != 0) return 101;
	*d = 0;
	return 0;
}
int cuDeviceGetName(char *name, int len, int) {
	snprintf(name, len, "qp CUDA emulator (CPU)");
	return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int) {
	*bytes = kTotalMem;
	return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
	switch (attr) {
	case 13: *v = 1000000; break;   // clock rate, kHz
	case 16: *v = 2; break;         // SMs
	case 36: *v = 1000000; break;   // memory clock, kHz
	case 37: *v = 64; break;        // bus width
	case 38: *v = 4 << 20; break;   // L2 bytes
	case 75: *v = 9; break;         // compute capability
	case 76: *v = 0; break;
	default: *v = 0;
	}
	return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
	*ctx = &dummy_ctx;
	return 0;
}
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuDevicePrimaryCtxSetFlags_v2(int, unsigned) { return 0; }
int cuCtxSetCurrent(void *) { return 0; }
int cuCtxSynchronize() { return 0; }
int cuMemGetInfo_v2(size_t *free, size_t *total) {
	*free = kTotalMem - used_mem;
	*total = kTotalMem;
	return 0;
}
int cuMemAlloc_v2(unsigned long long *p, size_t size) {
	if (size == 0) return 1;
	if (size > kTotalMem - used_mem) return 2;
	// QP_EMU_EXACT (the ASan build): allocate only up to the next multiple
	// of 16, so that a read past what the kernels may touch is reported.
#ifdef QP_EMU_EXACT
	const size_t rounded = (size + 15) & ~size_t(15);
#else
	const size_t rounded = (size + 255) & ~size_t(255);
#endif
	void *q = nullptr;
	if (posix_memalign(&q, 256, rounded) != 0) return 2;
	memset(q, 0xa5, rounded); // never zero: unwritten outputs show
	allocs[q] = rounded;
	used_mem += rounded;
	*p = reinterpret_cast<unsigned long long>(q);
	return 0;
}
int cuMemFree_v2(unsigned long long p) {
	auto it = allocs.find(reinterpret_cast<void *>(p));
	if (it == allocs.end()) return 1;
	used_mem -= it->second;
	allocs.erase(it);
	free(reinterpret_cast<void *>(p));
	return 0;
}
int cuMemAllocHost_v2(void **p, size_t size) {
	*p = aligned_alloc(4096, (size + 4095) & ~size_t(4095));
	return *p ? 0 : 2;
}
int cuMemFreeHost(void *p) {
	free(p);
	return 0;
}
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) {
	memcpy(reinterpret_cast<void *>(dst), src, n);
	return 0;
}
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) {
	memcpy(dst, reinterpret_cast<const void *>(src), n);
	return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *) {
	return cuMemcpyHtoD_v2(dst, src, n);
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *) { return cuMemcpyDtoH_v2(dst, src, n); }
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void *) {
	memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n);
	return 0;
}
int cuMemsetD32Async(unsigned long long dst, unsigned v, size_t n, void *) {
	unsigned *p = reinterpret_cast<unsigned *>(dst);
	for (size_t i = 0; i < n; i++) p[i] = v;
	return 0;
}
int cuStreamCreate(void **s, unsigned) {
	*s = new int(0);
	return 0;
}
int cuStreamSynchronize(void *) { return 0; }
// cuStreamQuery and cuEventQuery: the emulator runs every launch and copy
// when it is enqueued, so the work is always done; they answer
// CUDA_ERROR_NOT_READY (600) on every other call all the same, so that a
// caller's polling loop (cuda.Context.SetPollWait) is exercised.
static int emu_query_calls;
static int emu_query() { return (__atomic_fetch_add(&emu_query_calls, 1, __ATOMIC_RELAXED) & 1) ? 0 : 600; }
int cuStreamQuery(void *) { return emu_query(); }
int cuStreamDestroy_v2(void *s) {
	delete static_cast<int *>(s);
	return 0;
}
int cuEventCreate(void **e, unsigned) {
	*e = new double(0);
	return 0;
}
int cuEventRecord(void *e, void *) {
	*static_cast<double *>(e) = now_ms();
	return 0;
}
int cuEventSynchronize(void *) { return 0; }
int cuEventQuery(void *) { return emu_query(); }
int cuEventElapsedTime(float *ms, void *a, void *b) {
	*ms = static_cast<float>(*static_cast<double *>(b) - *static_cast<double *>(a));
	return 0;
}
int cuEventDestroy_v2(void *e) {
	delete static_cast<double *>(e);
	return 0;
}
int cuModuleLoadData(void **m, const void *) {
	*m = &dummy_mod;
	return 0;
}
int cuModuleUnload(void *) { return 0; }
int cuModuleGetFunction(void **f, void *, const char *name) {
	auto &r = emu::registry();
	auto it = r.find(name);
	if (it == r.end()) return 500;
	*f = &it->second;
	return 0;
}
int cuFuncGetAttribute(int *v, int attr, void *) {
	switch (attr) {
	case 0: *v = 1024; break; // max threads per block
	case 4: *v = 32; break;   // registers
	default: *v = 0;
	}
	return 0;
}
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *, int, size_t) {
	*n = 1;
	return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned,
                   void *, void **params, void **) {
	auto *k = static_cast<emu::Kernel *>(f);
	emu::launch_fn = k->fn;
	emu::launch_inv = k->inv;
	emu::launch_params = params;
	emu::grid_dim = dim3{gx, gy, gz};
	emu::block_dim = dim3{bx, by, bz};
	for (unsigned z = 0; z < gz; z++)
		for (unsigned y = 0; y < gy; y++)
			for (unsigned x = 0; x < gx; x++) {
				emu::block_idx = dim3{x, y, z};
				emu::run_cta(bx * by * bz);
			}
	return 0;
}

} // extern "C"
