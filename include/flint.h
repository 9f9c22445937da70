/* flint.h: kiln's C API, a drop-in for the C API of Flint (Flint's "C compatibility mode").
 *
 * Compiles as C11 and as C++. Every function is a thin layer over kiln's C++ API
 * (<kiln/kiln.hpp>): an FGraphNode wraps a kiln::Tensor, so graphs are built lazily and run by
 * kiln's executor when a result is asked for.
 *
 * Example (the document's, corrected as the project's decision 3 says):
 *
 *   float data_a[] = {0, 1, 2, 3, 4, 5};
 *   size_t shape_a[] = {2, 3};
 *   float data_b[] = {2, 4, 6};
 *   size_t shape_b = 3;
 *   FGraphNode *a = fCreateGraph(data_a, 6, F_FLOAT32, shape_a, 2);
 *   FGraphNode *b = fCreateGraph(data_b, 3, F_FLOAT32, &shape_b, 1);
 *   FGraphNode *c = fCalculateResult(fadd(a, b));   // {{2, 5, 8}, {5, 8, 11}}
 *   float *values = (float *)c->result_data->data;  // 6 values, row-major
 *   fFreeGraph(c);                                  // frees a and b too
 *
 * General rules (kiln's semantics, where the Flint document is silent or wrong):
 *
 * - Errors. No function throws or aborts. A failing function returns NULL (or its error code)
 *   and sets fErrorType() and fErrorMessage(); the message names the function and the operand
 *   shapes, e.g. "fmatmul: incompatible shapes [2,3] and [4,5]". The error state is kept per
 *   thread and, like errno, stays until the next error: check it after a call reported a
 *   failure. It is NO_ERROR and "" before the first error. When the logging level is at least
 *   1 (see fSetLoggingLevel) every error is also written to stderr at F_ERROR level.
 *   Shape and argument errors are found when a node is built, not when it runs. A NULL node
 *   pointer, a node already freed, or a NULL array argument is an INVALID_SELECT error;
 *   sizes that cannot be allocated give OUT_OF_MEMORY.
 * - Types. F_INT32 < F_INT64 < F_FLOAT32 < F_FLOAT64: a binary op returns the larger of its
 *   operand types. A scalar argument counts as its suffix's type (_ci: F_INT32, _cl: F_INT64,
 *   _cf: F_FLOAT32, _cd: F_FLOAT64) on either side, so fsub_icd(2.5, <F_INT32 node>) is
 *   F_FLOAT64. Float-valued unary ops (sqrt, exp, log*, trig) on integer nodes give F_FLOAT64.
 *   Integer division by zero gives 0.
 * - Broadcasting. Normal broadcasting aligns two shapes at the right, inverse broadcasting at
 *   the left; a missing dimension or one of size 1 repeats. Where both fit, normal is used
 *   unless fEnforceInverseBroadcasting was called on that operand. Nothing is copied.
 * - Shapes. Nodes have at least one dimension: where kiln would give a 0-dimensional result
 *   (reducing a 1-D node, convolving or pooling a 1-D node) the C API gives shape [1].
 * - Dimension arguments (int) may be negative; they count from the end (-1: the last one).
 * - Results. After fExecuteGraph/fCalculateResult, node->result_data->data holds
 *   result_data->num_entries values of node->operation.data_type in row-major order. The
 *   memory belongs to the node and lives until the node is freed (or fOptimizeMemory'd);
 *   do not free or realloc it. result_data is NULL while the node has not been executed.
 * - Backends. The CPU backend, and a GPU backend on OpenCL (any OpenCL 1.2 device; the
 *   environment variable KILN_OPENCL_DEVICE picks one by name). fExecuteGraph_gpu computes on the
 *   device and reads the node's result back into result_data; intermediate results stay on the
 *   device. Where OpenCL finds no device, the GPU functions fail cleanly with OCL_ERROR.
 * - Threads. Building nodes from several threads is safe; one node must not be freed while
 *   another thread uses it.
 *
 * Generic forms. In C11, fadd, fsub, fmul, fdiv, fpow, fless, fgreater, fequal and fconstant
 * are _Generic macros that pick the _g/_ci/_cl/_cf/_cd (or _ic*) function from the argument
 * types (fmin and fmax are not, because <math.h> has functions of those names; use fmin_g,
 * fmin_ci, ...). Define FLINT_NO_GENERIC_MACROS before including this header to leave them out.
 * In C++ they are overloaded inline functions, fmin and fmax included.
 */
#ifndef FLINT_H
#define FLINT_H

#include <stddef.h>

#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums get int as their fixed underlying type, so that every int a C caller passes
 * is a valid value on the C++ side (an unknown value is reported as an error, not undefined). */
#ifdef __cplusplus
#define FLINT_ENUM_BASE : int
#else
#define FLINT_ENUM_BASE
#endif

/* Backend bits, for flintInit and flintInitializedBackends. */
#define FLINT_BACKEND_ONLY_CPU 1
#define FLINT_BACKEND_ONLY_GPU 2
#define FLINT_BACKEND_BOTH 3

/** The version of the format fserialize writes (see fserialize). */
#define FLINT_SERIALIZATION_VERSION 1

/** Types of errors (also see fErrorMessage). kiln's C++ kiln::ErrorCode has the same
 * categories in the same order.
 * - NO_ERROR: no error occurred up until now
 * - WRONG_TYPE: a node has the wrong data type, e.g. a floating point node in feven
 * - ILLEGAL_DIMENSION: a dimension argument is outside the legal range of the function, e.g.
 *   flattening the first dimension, or a negative/too large size in a shape
 * - ILLEGAL_DIMENSIONALITY: the number of dimensions of an operand or argument does not work
 *   with the function (e.g. matrix multiplication with 1-dimensional nodes)
 * - INCOMPATIBLE_SHAPES: the shapes of the operands do not fit together
 * - INVALID_SELECT: an index, slice, window or argument is impossible or outside the node;
 *   also NULL or freed node pointers and NULL arrays
 * - OCL_ERROR: the GPU (OpenCL) backend failed: no OpenCL device, a kernel that did not build
 *   (the message holds the build log), or a device that was lost
 * - INTERNAL_ERROR: illegal state of kiln; should not happen (please report it)
 * - OUT_OF_MEMORY: memory for a result could not be allocated, or a size is too large
 * - ILLEGAL_DERIVE: a gradient cannot be computed (variable not marked, output not built in
 *   a gradient context)
 * - IO_ERROR: a file cannot be read or written, or serialized bytes are truncated or corrupt
 */
enum FErrorType FLINT_ENUM_BASE {
  NO_ERROR,
  WRONG_TYPE,
  ILLEGAL_DIMENSION,
  ILLEGAL_DIMENSIONALITY,
  INCOMPATIBLE_SHAPES,
  INVALID_SELECT,
  OCL_ERROR,
  INTERNAL_ERROR,
  OUT_OF_MEMORY,
  ILLEGAL_DERIVE,
  IO_ERROR
};
typedef enum FErrorType FErrorType;

/** Logging levels; the value of each is the level of fSetLoggingLevel that shows it.
 * - F_NO_LOGGING (0): nothing is logged
 * - F_ERROR (1): errors of calls to the framework (every failing call logs one)
 * - F_WARNING (2): probably unwanted behaviour caused by misuse of functions
 * - F_INFO (3): informational data of the framework
 * - F_VERBOSE (4): verbose information, may be helpful to users of the library
 * - F_DEBUG (5): internal debugging information */
enum FLogType FLINT_ENUM_BASE { F_NO_LOGGING, F_ERROR, F_WARNING, F_INFO, F_VERBOSE, F_DEBUG };
typedef enum FLogType FLogType;

/** Image formats for fstore_image. */
enum FImageFormat FLINT_ENUM_BASE { F_PNG, F_JPEG, F_BMP };
typedef enum FImageFormat FImageFormat;

/** The 4 data types: F_INT32 (32-bit integer), F_INT64 (64-bit integer), F_FLOAT32 (32-bit
 * floating point), F_FLOAT64 (64-bit floating point). */
enum FType FLINT_ENUM_BASE { F_INT32, F_INT64, F_FLOAT32, F_FLOAT64 };
typedef enum FType FType;

/** The operation a node represents (FGraphNode.operation.op_type). Set by the function that
 * built the node; nodes made by fCreateGraph, fdeserialize, fload_image and fOptimizeMemory are
 * FSTORE; gradient nodes carry the type of the last operation of kiln's gradient graph. */
enum FOperationType FLINT_ENUM_BASE {
  FSTORE,
  FGEN_RANDOM,
  FGEN_CONSTANT,
  FGEN_ARANGE,
  FADD,
  FSUB,
  FMUL,
  FDIV,
  FPOW,
  FNEG,
  FLOG,
  FSIGN,
  FEVEN,
  FLOG2,
  FLOG10,
  FSIN,
  FCOS,
  FTAN,
  FASIN,
  FACOS,
  FATAN,
  FSQRT,
  FEXP,
  FLATTEN,
  FMATMUL,
  FCONVERSION,
  FRESHAPE,
  FMIN,
  FMAX,
  FREDUCE_SUM,
  FREDUCE_MUL,
  FREDUCE_MIN,
  FREDUCE_MAX,
  FSLICE,
  FABS,
  FREPEAT,
  FTRANSPOSE,
  FEXTEND,
  FCONCAT,
  FLESS,
  FEQUAL,
  FGREATER,
  FCONVOLVE,
  FGRADIENT_CONVOLVE1,
  FGRADIENT_CONVOLVE2,
  FINDEX,
  FSET_INDEX,
  FSLIDING_WINDOW,
  FUNSLIDE_WINDOW,
  FPOOLING_MAX,
  FPOOLING_SUM,
  FGRADIENT_POOLING_MAX,
  FDROPOUT,
  /* kiln additions */
  FEXPAND,
  FPERMUTATE,
  FOTHER, /* a node of kiln's own (e.g. inside a gradient) with no Flint counterpart */
  FNUM_OPERATION_TYPES
};
typedef enum FOperationType FOperationType;

/* The structs below have the Flint library's members, order and sizes on x86-64 (FGraphNode 72
 * bytes, FOperation 32, FResultData and FStore 24), so that a program compiled against Flint's
 * header runs against kiln's library unchanged. `mem_id` is Flint's cl_mem (OpenCL declares
 * cl_mem as `struct _cl_mem *`, so the two types are the same whether or not <CL/cl.h> is
 * included). */
struct _cl_mem;

/** One operation: its result shape (`shape`, an array of `dimensions` sizes), `op_type`, the
 * `data_type` of its result, and `additional_data`: for FSTORE nodes a pointer to an FStore
 * describing the stored values; for FSLICE an FSlice, for FEXTEND an FExtend, for
 * FSLIDING_WINDOW an FSlidingWindow holding the call's arguments; else NULL.
 * `broadcasting_mode` is 1 while fEnforceInverseBroadcasting is in effect for the node, else 0.
 * Read only. */
struct FOperation {
  size_t *shape;
  void *additional_data;
  enum FOperationType op_type;
  enum FType data_type;
  int dimensions;
  int broadcasting_mode;
};
typedef struct FOperation FOperation;

/** The result of an executed node: `num_entries` values (not bytes) of the node's data type
 * at `data`, row-major. `mem_id` is the OpenCL buffer that holds the same values where the node
 * was computed on the GPU backend, else NULL. Owned by the node: do not free, realloc or write
 * it. */
struct FResultData {
  struct _cl_mem *mem_id;
  void *data;
  size_t num_entries;
};
typedef struct FResultData FResultData;

/** One node of a graph. `operation` describes it, `predecessors` (an array of
 * `num_predecessor` nodes) are its operands in argument order: a scalar argument (fadd_ci and
 * every other _c and _ic form) is a constant node (FGEN_CONSTANT) of the other operand's shape
 * and the scalar's type, made with the node and freed with it, as in Flint's graphs.
 * `reference_counter` counts how often it is used as a predecessor (see fFreeGraph), and
 * `result_data` is NULL until the node is executed. `gradient_data` is Flint's bookkeeping of
 * the variables a node depends on; kiln keeps that inside its graph, and it is always NULL. Nodes
 * are made and freed by the API only; read their fields, do not write them (except
 * reference_counter, as fOptimizeMemory's documentation describes). */
struct FGraphNode {
  int num_predecessor;
  struct FGraphNode **predecessors;
  FOperation operation;
  size_t reference_counter;
  FResultData *result_data;
  void *gradient_data;
};
typedef struct FGraphNode FGraphNode;

/** The values of an FSTORE node (operation.additional_data): `num_entries` values of the
 * node's type at `data`. Read only: kiln's graphs are immutable, so writing has no defined
 * effect. */
struct FStore {
  struct _cl_mem *mem_id; /* always NULL: a store's values are on the host */
  void *data;
  size_t num_entries;
};
typedef struct FStore FStore;

/** The arguments of an FSLICE node (operation.additional_data), one per dimension, as passed to
 * fslice_step (fslice: steps of 1). */
struct FSlice {
  long *start;
  long *end;
  long *step;
};
typedef struct FSlice FSlice;

/** The arguments of an FEXTEND node: `start` is fextend's insert_at, `step` its step_size
 * (fextend: steps of 1). */
struct FExtend {
  size_t *start;
  long *step;
};
typedef struct FExtend FExtend;

/** The arguments of an FSLIDING_WINDOW node: the window `size` and `step` per dimension. */
struct FSlidingWindow {
  size_t *size;
  unsigned int *step;
};
typedef struct FSlidingWindow FSlidingWindow;

/* ---- backends ---------------------------------------------------------------------------- */

/** Initializes backends: FLINT_BACKEND_ONLY_CPU initializes the CPU backend (NO_ERROR);
 * FLINT_BACKEND_ONLY_GPU the GPU (OpenCL) backend (OCL_ERROR without an OpenCL device), after
 * which fExecuteGraph computes on the GPU while it is the only backend initialized;
 * FLINT_BACKEND_BOTH both (NO_ERROR; without a device it logs a warning and initializes the CPU
 * backend only). Any other value: INVALID_SELECT. Calling it is optional: execution initializes
 * the CPU backend when needed. */
FErrorType flintInit(int backends);
/** Initializes the CPU backend. NO_ERROR. */
FErrorType flintInit_cpu(void);
/** Initializes the GPU (OpenCL) backend: NO_ERROR, or OCL_ERROR without an OpenCL device. */
FErrorType flintInit_gpu(void);
/** The initialized backends as bits: FLINT_BACKEND_ONLY_CPU once the CPU backend is
 * initialized, FLINT_BACKEND_ONLY_GPU once the GPU backend is, 0 before (or after
 * flintCleanup). */
int flintInitializedBackends(void);
/** Releases the backends: the CPU executor's worker threads are stopped (call it before exit
 * when checking for leaks: threads still running at exit hold buffers). Nodes stay valid; the
 * next execution (or flintInit) initializes the CPU backend again. NO_ERROR. */
FErrorType flintCleanup(void);
/** Releases the CPU backend, as flintCleanup. NO_ERROR. */
FErrorType flintCleanup_cpu(void);
/** Nothing to clean up without a GPU backend. NO_ERROR. */
FErrorType flintCleanup_gpu(void);

/* ---- logging and errors ------------------------------------------------------------------ */

/** Sets the logging level 0-5 (the FLogType values): 0 no logging, 1 only F_ERROR, 2 up to
 * F_WARNING, 3 up to F_INFO, 4 up to F_VERBOSE, 5 up to F_DEBUG. The default is 1. A value
 * outside 0-5 is an INVALID_SELECT error and keeps the level. */
void fSetLoggingLevel(enum FLogType type);
/** Writes `msg` to stderr as "kiln <level>: <msg>" if the logging level shows `type`. */
void flogging(enum FLogType type, const char *msg);
/** The type of the last error of this thread (NO_ERROR before the first error). */
FErrorType fErrorType(void);
/** The message of the last error of this thread, "" before the first error. Valid until the
 * next error of this thread. */
const char *fErrorMessage(void);

/* ---- eager execution --------------------------------------------------------------------- */

/** From now on every node is executed when it is built (result_data is set at once). */
void fEnableEagerExecution(void);
/** From now on nodes are executed only when needed (fExecuteGraph etc.). The default. */
void fDisableEagerExecution(void);
/** 1 if eager execution is enabled, else 0. */
int fIsEagerExecution(void);

/* ---- creating and freeing nodes ---------------------------------------------------------- */

/** A node holding a copy of `data`: `num_entries` values of `data_type`, with `shape` an array
 * of `dimensions` (>= 1) sizes whose product must be `num_entries` (else INCOMPATIBLE_SHAPES).
 * `data` and `shape` may be freed afterwards. The node is FSTORE. */
FGraphNode *fCreateGraph(const void *data, const int num_entries, const enum FType data_type,
                         const size_t *shape, const int dimensions);
/** A node of `shape` (`dimensions` sizes) with every entry `value` (F_INT32). Nothing is
 * allocated until it is executed. */
FGraphNode *fconstant_i(const int value, const size_t *shape, const int dimensions);
/** As fconstant_i, F_INT64. */
FGraphNode *fconstant_l(const long value, const size_t *shape, const int dimensions);
/** As fconstant_i, F_FLOAT32. */
FGraphNode *fconstant_f(const float value, const size_t *shape, const int dimensions);
/** As fconstant_i, F_FLOAT64. */
FGraphNode *fconstant_d(const double value, const size_t *shape, const int dimensions);
/** F_FLOAT64 values uniformly distributed in [0, 1). Each call draws a new seed. */
FGraphNode *frandom(const size_t *shape, const int dimensions);
/** F_INT64 node of `shape` whose every entry is its index along dimension `ax`. */
FGraphNode *farange(const size_t *shape, const int dimensions, const int ax);

/** Frees `graph` if its reference_counter is 0 (if not, it is still used by another node and
 * nothing happens). Freeing a node decrements the counter of each of its predecessors, and
 * those whose counter reaches 0 are freed in turn (iteratively, so deep graphs are fine). So
 * it suffices to free the results (leaves) of a graph. A NULL or already freed node is an
 * INVALID_SELECT error. */
void fFreeGraph(FGraphNode *graph);

/* ---- execution --------------------------------------------------------------------------- */

/** Computes `node` (and whatever of its graph has not been computed) and returns `node`, with
 * result_data set. NULL on error (e.g. OUT_OF_MEMORY, INVALID_SELECT for indices outside their
 * dimension that were only known at run time). */
FGraphNode *fExecuteGraph(FGraphNode *node);
/** fExecuteGraph on the CPU backend. */
FGraphNode *fExecuteGraph_cpu(FGraphNode *node);
/** fExecuteGraph on the GPU (OpenCL) backend; the result is read back into result_data, the
 * graph's intermediate results stay on the device. NULL with OCL_ERROR without a device. */
FGraphNode *fExecuteGraph_gpu(FGraphNode *node);
/** Computes `node` like fExecuteGraph_cpu (kiln computes missing predecessors too). */
FGraphNode *fExecuteGraph_cpu_eagerly(FGraphNode *node);
/** Computes `node` like fExecuteGraph_gpu. */
FGraphNode *fExecuteGraph_gpu_eagerly(FGraphNode *node);
/** The node's result_data, in host memory (a result computed on the GPU was read back when it was
 * attached); NULL if it was not executed. Never executes. */
FResultData *fSyncMemory(FGraphNode *data);
/** fExecuteGraph followed by fSyncMemory: returns `node` with result_data set, NULL on error. */
FGraphNode *fCalculateResult(FGraphNode *node);

/* ---- gradients --------------------------------------------------------------------------- */

/** The gradient of the sum of `outputfct` with respect to `dx`, a node of dx's shape, of the
 * larger of the two types in the order F_INT32 < F_INT64 < F_FLOAT32 < F_FLOAT64, and F_FLOAT64
 * when both are integers (as the Flint library computes it; its document's "float if both are
 * float, else double" differs from the library, and programs follow the library): an F_FLOAT32
 * output and an F_INT64 variable give F_FLOAT32. Where values tie in freduce_max/freduce_min,
 * every element equal to the result gets the whole incoming gradient; in fmax/fmin (and their
 * scalar forms) a tie gives it all to the first operand. `dx` must be marked
 * (fMarkGradientVariable) and `outputfct` built in a gradient context, else ILLEGAL_DERIVE. A
 * variable outputfct does not depend on gets zeros. The result is a new node without
 * predecessors (reference_counter 0): free it with fFreeGraph. */
FGraphNode *fCalculateGradient(FGraphNode *outputfct, FGraphNode *dx);
/** The gradients of `outputfct` with respect to the `num_gradients` variables in `dx`, written
 * to `gradients[i]` (as fCalculateGradient, computed in one backward pass). Returns NO_ERROR or
 * the error type; on error nothing is written to `gradients`. */
FErrorType fCalculateGradients(FGraphNode *outputfct, FGraphNode **dx,
                               const unsigned int num_gradients, FGraphNode **gradients);
/** Starts a gradient context: nodes built until the matching fStopGradientContext can be
 * differentiated. Contexts nest (they are counted) and are shared by all threads. */
void fStartGradientContext(void);
/** Ends the innermost gradient context (nothing if none is open). */
void fStopGradientContext(void);
/** true while a gradient context is open. */
bool fIsGradientContext(void);
/** Marks `node` as a variable gradients can be computed for. */
void fMarkGradientVariable(FGraphNode *node);
/** Removes the mark of fMarkGradientVariable. */
void fUnmarkGradientVariable(FGraphNode *node);

/* ---- memory and broadcasting ------------------------------------------------------------- */

/** If `node` has been executed and is neither a marked variable nor built in a gradient
 * context, turns it into an FSTORE node holding its result and drops its predecessors: each
 * predecessor's reference_counter is decremented and those reaching 0 are freed (as by
 * fFreeGraph). Increment the counter of a predecessor beforehand to keep using it. Otherwise
 * the node is left as it is. Returns `node` (NULL on error). */
FGraphNode *fOptimizeMemory(FGraphNode *node);
/** From now on `node` is broadcast inversely (aligned at the left) wherever it is an operand
 * of a broadcasting operation; where only normal broadcasting fits, that operation fails with
 * INCOMPATIBLE_SHAPES. The mark belongs to this node only and is not passed to results. */
void fEnforceInverseBroadcasting(FGraphNode *node);
/** Undoes fEnforceInverseBroadcasting for `node`. */
void fUnenforceInverseBroadcasting(FGraphNode *node);

/* ---- serialization and images ------------------------------------------------------------ */

/** Serializes the type, shape and values of `node` (executing it first if needed) into a
 * buffer from malloc (free it with free()); its size is written to *bytes_written if that is
 * not NULL. NULL on error.
 *
 * Format, version 1 (all integers little-endian):
 *   offset 0          4 bytes   magic "KILN"
 *   offset 4          u16       format version (FLINT_SERIALIZATION_VERSION = 1)
 *   offset 6          u8        data type (0 F_INT32, 1 F_INT64, 2 F_FLOAT32, 3 F_FLOAT64)
 *   offset 7          u8        rank r, 1..32
 *   offset 8          r x u64   the dimensions
 *   offset 8+8r       u32       CRC-32 (IEEE 802.3, as zlib's crc32) of bytes [0, 8+8r)
 *   offset 12+8r      n x size  the n = product(dims) values, row-major, little-endian
 *                               (two's complement integers, IEEE 754 floats)
 *   then              u32       CRC-32 of the value bytes
 * Total: 16 + 8r + n * size bytes (size 4 for F_INT32/F_FLOAT32, 8 otherwise). See also
 * docs/serialization.md. */
char *fserialize(FGraphNode *node, size_t *bytes_written);
/** Reads a node written by fserialize (an FSTORE node, reference_counter 0).
 *
 * `bytes_read` is in/out: if it is not NULL and *bytes_read is not 0 on entry, *bytes_read is
 * the number of bytes available at `data`, and nothing beyond them is read; a buffer shorter
 * than the header claims is an IO_ERROR. If it is NULL or *bytes_read is 0, the size is taken
 * from the header (whose checksum is verified before anything else is read). On success the
 * number of bytes the node occupied is written to *bytes_read (if not NULL).
 * Truncated or corrupt bytes (bad magic, unknown version or type, rank 0 or above 32, sizes
 * that overflow, checksum mismatch, a buffer shorter than the header claims) give IO_ERROR;
 * they never crash. */
FGraphNode *fdeserialize(char *data, size_t *bytes_read);
/** Loads an image as an F_FLOAT32 node of shape [height, width, channels], the format known
 * from the file's content. Values are in [0, 1]: 8-bit samples divided by 255, 16-bit ones by
 * 65535; HDR images keep their linear values. Formats read:
 *   PNG (libpng): 1-4 channels as stored (grey, grey+alpha, RGB, RGBA; palettes expand to RGB,
 *     or RGBA with transparency), 1- to 16-bit samples, interlaced;
 *   JPEG (libjpeg-turbo): grey (1 channel) or colour (3; CMYK converted), baseline and
 *     progressive;
 *   GIF (giflib): the first frame on its screen, 4 channels (RGBA);
 *   BMP: 1-32 bits per pixel, uncompressed or bit fields, 3 channels (4 with alpha);
 *   TGA: colour-mapped, true colour and grey, raw and run-length coded;
 *   PSD: the merged image, 8 or 16 bits, raw or RLE, RGB as 4 channels (RGBA), grey as 1 or 2;
 *   HDR (Radiance RGBE): 3 channels; PNM: binary P5 (1 channel) and P6 (3), samples divided by
 *     their maxval.
 * Not read: Softimage PIC (which stb_image reads) and the other PNM kinds (P1-P4, P7).
 * Size limit: an image may have at most 2^28 pixels (width * height); the environment variable
 * KILN_IMAGE_MAX_PIXELS (read once) sets another limit. The header's size is checked against
 * the limit and against what the file's bytes can encode before any memory is allocated for the
 * pixels. An unreadable path, a file that is not a regular file, is not one of these formats, is
 * damaged or truncated, or is over the limit is an IO_ERROR whose message names the file and
 * what was wrong, in printable ASCII. */
FGraphNode *fload_image(const char *path);
/** Writes `node` as an image file: shape [height, width, channels] with 1-4 channels (or
 * [height, width]: grayscale) and values in [0, 1] of any type, clamped to [0, 1] and
 * rounded to 8 bits. F_PNG (libpng) is lossless, F_BMP stores 3 channels (RGB) or 4 (RGBA) and
 * expands grayscale to RGB, F_JPEG (libjpeg-turbo, quality 95, 4:4:4) is lossy and drops alpha.
 * A regular file is replaced atomically (a failed write leaves the old file whole). Executes
 * the node if needed. Returns NO_ERROR or the error type (IO_ERROR if the file cannot be
 * written). */
FErrorType fstore_image(FGraphNode *node, const char *path, enum FImageFormat format);

/* ---- elementwise binary operations --------------------------------------------------------- */

/** a[i] + b[i] (broadcasting). */
FGraphNode *fadd_g(FGraphNode *a, FGraphNode *b);
/** a[i] - b[i] (broadcasting). */
FGraphNode *fsub_g(FGraphNode *a, FGraphNode *b);
/** a[i] / b[i] (broadcasting; integer division truncates, division by 0 gives 0). */
FGraphNode *fdiv_g(FGraphNode *a, FGraphNode *b);
/** a[i] * b[i] (broadcasting). */
FGraphNode *fmul_g(FGraphNode *a, FGraphNode *b);
/** pow(a[i], b[i]) (broadcasting). */
FGraphNode *fpow_g(FGraphNode *a, FGraphNode *b);

/** a[i] + b. */
FGraphNode *fadd_ci(FGraphNode *a, const int b);
/** a[i] + b. */
FGraphNode *fadd_cl(FGraphNode *a, const long b);
/** a[i] + b. */
FGraphNode *fadd_cf(FGraphNode *a, const float b);
/** a[i] + b. */
FGraphNode *fadd_cd(FGraphNode *a, const double b);
/** a[i] - b. */
FGraphNode *fsub_ci(FGraphNode *a, const int b);
/** a[i] - b. */
FGraphNode *fsub_cl(FGraphNode *a, const long b);
/** a[i] - b. */
FGraphNode *fsub_cf(FGraphNode *a, const float b);
/** a[i] - b. */
FGraphNode *fsub_cd(FGraphNode *a, const double b);
/** a - b[i]. */
FGraphNode *fsub_ici(const int a, FGraphNode *b);
/** a - b[i]. */
FGraphNode *fsub_icl(const long a, FGraphNode *b);
/** a - b[i]. */
FGraphNode *fsub_icf(const float a, FGraphNode *b);
/** a - b[i]. */
FGraphNode *fsub_icd(const double a, FGraphNode *b);
/** a[i] / b. */
FGraphNode *fdiv_ci(FGraphNode *a, const int b);
/** a[i] / b. */
FGraphNode *fdiv_cl(FGraphNode *a, const long b);
/** a[i] / b. */
FGraphNode *fdiv_cf(FGraphNode *a, const float b);
/** a[i] / b. */
FGraphNode *fdiv_cd(FGraphNode *a, const double b);
/** a / b[i]. */
FGraphNode *fdiv_ici(const int a, FGraphNode *b);
/** a / b[i]. */
FGraphNode *fdiv_icl(const long a, FGraphNode *b);
/** a / b[i]. */
FGraphNode *fdiv_icf(const float a, FGraphNode *b);
/** a / b[i]. */
FGraphNode *fdiv_icd(const double a, FGraphNode *b);
/** a[i] * b. */
FGraphNode *fmul_ci(FGraphNode *a, const int b);
/** a[i] * b. */
FGraphNode *fmul_cl(FGraphNode *a, const long b);
/** a[i] * b. */
FGraphNode *fmul_cf(FGraphNode *a, const float b);
/** a[i] * b. */
FGraphNode *fmul_cd(FGraphNode *a, const double b);
/** pow(a[i], b). */
FGraphNode *fpow_ci(FGraphNode *a, const int b);
/** pow(a[i], b). */
FGraphNode *fpow_cl(FGraphNode *a, const long b);
/** pow(a[i], b). */
FGraphNode *fpow_cf(FGraphNode *a, const float b);
/** pow(a[i], b). */
FGraphNode *fpow_cd(FGraphNode *a, const double b);

/* ---- elementwise unary operations ---------------------------------------------------------- */

/** Natural logarithm (float-valued: integer nodes give F_FLOAT64). */
FGraphNode *flog(FGraphNode *a);
/** Logarithm to base 2 (float-valued). */
FGraphNode *flog2(FGraphNode *a);
/** Logarithm to base 10 (float-valued). */
FGraphNode *flog10(FGraphNode *a);
/** Sine (float-valued). */
FGraphNode *fsin(FGraphNode *a);
/** Square root (float-valued). */
FGraphNode *fsqrt_g(FGraphNode *a);
/** e to the power of a[i] (float-valued). */
FGraphNode *fexp(FGraphNode *a);
/** Cosine (float-valued). */
FGraphNode *fcos(FGraphNode *a);
/** Tangent (float-valued). */
FGraphNode *ftan(FGraphNode *a);
/** Inverse sine (float-valued). */
FGraphNode *fasin(FGraphNode *a);
/** Inverse cosine (float-valued). */
FGraphNode *facos(FGraphNode *a);
/** Inverse tangent (float-valued). */
FGraphNode *fatan(FGraphNode *a);
/** -a[i], same type. */
FGraphNode *fneg(FGraphNode *a);
/** F_INT32: 1 where a[i] >= 0 (0 included), else -1. Any type. */
FGraphNode *fsign(FGraphNode *a);
/** F_INT32: 1 where a[i] is even, else 0. `a` must be an integer node (else WRONG_TYPE). */
FGraphNode *feven(FGraphNode *a);
/** |a[i]|, same type. */
FGraphNode *fabs_g(FGraphNode *a);

/* ---- comparisons, minimum and maximum ------------------------------------------------------ */

/** F_INT32: 1 where a[i] < b[i], else 0 (compared in the promoted type; broadcasting). */
FGraphNode *fless_g(FGraphNode *a, FGraphNode *b);
/** F_INT32: 1 where a[i] > b[i], else 0. */
FGraphNode *fgreater_g(FGraphNode *a, FGraphNode *b);
/** F_INT32: 1 where a[i] == b[i], else 0. */
FGraphNode *fequal_g(FGraphNode *a, FGraphNode *b);
/** F_INT32: 1 where a[i] < b, else 0. */
FGraphNode *fless_ci(FGraphNode *a, const int b);
/** F_INT32: 1 where a[i] < b, else 0. */
FGraphNode *fless_cl(FGraphNode *a, const long b);
/** F_INT32: 1 where a[i] < b, else 0. */
FGraphNode *fless_cf(FGraphNode *a, const float b);
/** F_INT32: 1 where a[i] < b, else 0. */
FGraphNode *fless_cd(FGraphNode *a, const double b);
/** F_INT32: 1 where a[i] > b, else 0. */
FGraphNode *fgreater_ci(FGraphNode *a, const int b);
/** F_INT32: 1 where a[i] > b, else 0. */
FGraphNode *fgreater_cl(FGraphNode *a, const long b);
/** F_INT32: 1 where a[i] > b, else 0. */
FGraphNode *fgreater_cf(FGraphNode *a, const float b);
/** F_INT32: 1 where a[i] > b, else 0. */
FGraphNode *fgreater_cd(FGraphNode *a, const double b);
/** F_INT32: 1 where a[i] == b, else 0. */
FGraphNode *fequal_ci(FGraphNode *a, const int b);
/** F_INT32: 1 where a[i] == b, else 0. */
FGraphNode *fequal_cl(FGraphNode *a, const long b);
/** F_INT32: 1 where a[i] == b, else 0. */
FGraphNode *fequal_cf(FGraphNode *a, const float b);
/** F_INT32: 1 where a[i] == b, else 0. */
FGraphNode *fequal_cd(FGraphNode *a, const double b);
/** Elementwise minimum (broadcasting; NaN propagates). Gradient: to `a` where a <= b, else to
 * `b` (a tie goes to the first operand, as in Flint). */
FGraphNode *fmin_g(FGraphNode *a, FGraphNode *b);
/** min(a[i], b). */
FGraphNode *fmin_ci(FGraphNode *a, const int b);
/** min(a[i], b). */
FGraphNode *fmin_cl(FGraphNode *a, const long b);
/** min(a[i], b). */
FGraphNode *fmin_cf(FGraphNode *a, const float b);
/** min(a[i], b). */
FGraphNode *fmin_cd(FGraphNode *a, const double b);
/** Elementwise maximum (broadcasting; NaN propagates). Gradient: to `a` where a >= b, else to
 * `b` (a tie goes to the first operand, as in Flint). */
FGraphNode *fmax_g(FGraphNode *a, FGraphNode *b);
/** max(a[i], b). */
FGraphNode *fmax_ci(FGraphNode *a, const int b);
/** max(a[i], b). */
FGraphNode *fmax_cl(FGraphNode *a, const long b);
/** max(a[i], b). */
FGraphNode *fmax_cf(FGraphNode *a, const float b);
/** max(a[i], b). */
FGraphNode *fmax_cd(FGraphNode *a, const double b);

/* ---- matrix multiplication and reductions -------------------------------------------------- */

/** Matrix product of the last two dimensions; the leading (batch) dimensions broadcast, so
 * [64, 32, 16] x [16, 24] gives [64, 32, 24]. Both need at least 2 dimensions
 * (ILLEGAL_DIMENSIONALITY); inner sizes must agree (INCOMPATIBLE_SHAPES). */
FGraphNode *fmatmul(FGraphNode *a, FGraphNode *b);
/** Sum over `dimension` (removed from the shape; a 1-D node gives shape [1]). Same type. */
FGraphNode *freduce_sum(FGraphNode *a, const int dimension);
/** Product over `dimension` (as freduce_sum). */
FGraphNode *freduce_mul(FGraphNode *a, const int dimension);
/** Minimum over `dimension` (as freduce_sum; an empty dimension is an error). Gradient: the
 * whole incoming gradient to every element equal to the minimum (as in Flint). */
FGraphNode *freduce_min(FGraphNode *a, const int dimension);
/** Maximum over `dimension` (as freduce_sum; an empty dimension is an error). Gradient: the
 * whole incoming gradient to every element equal to the maximum (as in Flint). */
FGraphNode *freduce_max(FGraphNode *a, const int dimension);

/* ---- shape operations ---------------------------------------------------------------------- */

/** The node as one dimension (a view: nothing is copied). */
FGraphNode *fflatten(FGraphNode *a);
/** Merges `dimension` into the one before it: [2, 3, 4] flattened at 1 is [6, 4].
 * Dimension 0 is an ILLEGAL_DIMENSION error. */
FGraphNode *fflatten_dimension(FGraphNode *a, int dimension);
/** The values converted to `newtype` (float to integer truncates toward zero and saturates;
 * NaN gives 0). An unknown type is WRONG_TYPE. */
FGraphNode *fconvert(FGraphNode *a, enum FType newtype);
/** The same values in `newshape` (`dimensions` >= 1 sizes with the same product). */
FGraphNode *freshape(FGraphNode *a, const size_t *newshape, const int dimensions);
/** Per dimension (one entry each) start (inclusive) and end (exclusive); negative values count
 * from the end as in Python, out-of-range values are clamped, crossed bounds give an empty
 * dimension. */
FGraphNode *fslice(FGraphNode *a, const long *start, const long *end);
/** fslice with a per-dimension step; a negative step walks backwards from start
 * (start > end); a step of 0 is INVALID_SELECT. */
FGraphNode *fslice_step(FGraphNode *a, const long *start, const long *end, const long *step);
/** Zeros of `new_shape` (one entry per dimension of `a`) with `a` placed at `insert_at`.
 * `a` must fit (INVALID_SELECT). */
FGraphNode *fextend(FGraphNode *a, const size_t *new_shape, const size_t *insert_at);
/** fextend with |step_size[i]| - 1 zeros placed between neighbouring elements of dimension i;
 * a negative step also reverses that dimension. */
FGraphNode *fextend_step(FGraphNode *a, const size_t *new_shape, const size_t *insert_at,
                         const long *step_size);
/** `a` and `b` joined along `axis`; the other dimensions must agree (INCOMPATIBLE_SHAPES).
 * Differing types are promoted. */
FGraphNode *fconcat(FGraphNode *a, FGraphNode *b, const unsigned int axis);
/** A new dimension of `size` inserted before dimension `axis` (0..rank), repeating the node. */
FGraphNode *fexpand(FGraphNode *a, const unsigned int axis, const unsigned int size);
/** The node concatenated with itself repititions[i] more times along dimension i (one entry per
 * dimension, each 0 or more; a negative count is INVALID_SELECT): dimension i becomes
 * repititions[i] + 1 times as large, so frepeat(a, {0, 1, 2}) of shape [d0, d1, d2] has shape
 * [d0, 2*d1, 3*d2]. This is the Flint library's rule (its implementation, its C++ wrapper and
 * its tests); the document's example, which counts all copies, is superseded. */
FGraphNode *frepeat(FGraphNode *a, int *repititions);
/** Permutes dimensions: result dimension i is input dimension transpositions[i] (one entry
 * per dimension, a permutation). */
FGraphNode *ftranspose(FGraphNode *a, int *transpositions);

/* ---- windows, convolution, indexing --------------------------------------------------------- */

/** Flint's convolution: `a` has n dimensions, the last reduced completely; `kernel` has n
 * dimensions (one filter; result n-1 dimensions, [1] for n = 1) or n+1 (filters along its
 * first dimension; result n dimensions with the filter index last). `steps` has n-1 entries
 * (may be NULL for n = 1). No padding: a dimension of size s with kernel size k and step t
 * gives floor((s-k)/t)+1 positions. */
FGraphNode *fconvolve(FGraphNode *a, FGraphNode *kernel, const unsigned int *steps);
/** Gathers along dimension d = rank(indices)-1 of `a`: indices' shape without its last
 * dimension must be a prefix of a's shape, and
 * result[i_0..i_{d-1}][j][rest] = a[i_0..i_{d-1}][indices[i_0..i_{d-1}][j]][rest]; the result
 * has a's shape with dimension d resized to the last size of `indices`. `indices` must be an
 * integer node (WRONG_TYPE); an index outside the dimension is INVALID_SELECT (when the node
 * is built if the indices are known then, else when it is executed). */
FGraphNode *findex(FGraphNode *a, FGraphNode *indices);
/** Scatters `b` into `a`: element b[p.., j, rest..] goes to a[p.., indices[p.., j], rest..]
 * (indices' shape is a prefix of b's). Every place of `a` that receives elements gets their
 * sum (a's old value there is replaced), other places keep a's value; a negative index drops
 * that element. */
FGraphNode *findex_set(FGraphNode *a, FGraphNode *b, FGraphNode *indices);
/** Every window of `size` (one entry per dimension) moved by `steps` (one per dimension), as a
 * new first dimension: [windows, size...]. Windows are ordered with the innermost dimension
 * moving fastest; no padding. A window larger than the node is INVALID_SELECT, and so is any
 * window over an empty dimension. */
FGraphNode *fsliding_window(FGraphNode *a, const size_t *size, const unsigned int *steps);
/** The inverse of fsliding_window: the windows (first dimension of `a`) placed back into a node
 * of `shape` (rank(a)-1 entries) with `steps` (rank(a)-1 entries); overlapping elements are
 * summed, gaps are 0. */
FGraphNode *funslide_window(FGraphNode *a, const size_t *shape, const unsigned int *steps);
/** `a` with the slices along `ax` in a random order (a new seed each call). */
FGraphNode *fpermutate(FGraphNode *a, unsigned int ax);
/** Windows of `window_size` (rank(a)-1 entries) moved by `step_size` (rank(a)-1 entries) over
 * the first rank(a)-1 dimensions; each window is summed together with the whole last
 * dimension. The result has one dimension fewer ([1] for a 1-D node). */
FGraphNode *fpooling_sum(FGraphNode *a, const size_t *window_size,
                         const unsigned int *step_size);
/** As fpooling_sum with the maximum. */
FGraphNode *fpooling_max(FGraphNode *a, const size_t *window_size,
                         const unsigned int *step_size);
/** Each element set to 0 with probability p (0 <= p <= 1, else INVALID_SELECT), the others
 * unchanged: no rescaling. A new seed each call. */
FGraphNode *fdropout(FGraphNode *g, const double p);

#ifdef __cplusplus
} /* extern "C" */

/* C++: overloads in place of the C11 generic macros. */
inline FGraphNode *fconstant(const int value, const size_t *shape, const int dimensions) {
  return fconstant_i(value, shape, dimensions);
}
inline FGraphNode *fconstant(const long value, const size_t *shape, const int dimensions) {
  return fconstant_l(value, shape, dimensions);
}
inline FGraphNode *fconstant(const float value, const size_t *shape, const int dimensions) {
  return fconstant_f(value, shape, dimensions);
}
inline FGraphNode *fconstant(const double value, const size_t *shape, const int dimensions) {
  return fconstant_d(value, shape, dimensions);
}
#define FLINT_CXX_BINARY_(name)                                                              \
  inline FGraphNode *name(FGraphNode *a, FGraphNode *b) { return name##_g(a, b); }           \
  inline FGraphNode *name(FGraphNode *a, const int b) { return name##_ci(a, b); }            \
  inline FGraphNode *name(FGraphNode *a, const long b) { return name##_cl(a, b); }           \
  inline FGraphNode *name(FGraphNode *a, const float b) { return name##_cf(a, b); }          \
  inline FGraphNode *name(FGraphNode *a, const double b) { return name##_cd(a, b); }
#define FLINT_CXX_INVERSE_(name)                                                             \
  inline FGraphNode *name(const int a, FGraphNode *b) { return name##_ici(a, b); }           \
  inline FGraphNode *name(const long a, FGraphNode *b) { return name##_icl(a, b); }          \
  inline FGraphNode *name(const float a, FGraphNode *b) { return name##_icf(a, b); }         \
  inline FGraphNode *name(const double a, FGraphNode *b) { return name##_icd(a, b); }
FLINT_CXX_BINARY_(fadd)
FLINT_CXX_BINARY_(fsub)
FLINT_CXX_INVERSE_(fsub)
FLINT_CXX_BINARY_(fmul)
FLINT_CXX_BINARY_(fdiv)
FLINT_CXX_INVERSE_(fdiv)
FLINT_CXX_BINARY_(fpow)
FLINT_CXX_BINARY_(fmin)
FLINT_CXX_BINARY_(fmax)
FLINT_CXX_BINARY_(fless)
FLINT_CXX_BINARY_(fgreater)
FLINT_CXX_BINARY_(fequal)
#undef FLINT_CXX_BINARY_
#undef FLINT_CXX_INVERSE_
inline FGraphNode *fflatten(FGraphNode *a, int dimension) {
  return fflatten_dimension(a, dimension);
}

#elif !defined(FLINT_NO_GENERIC_MACROS) && defined(__STDC_VERSION__) && \
    __STDC_VERSION__ >= 201112L

/* C11: generic forms choosing the function from the type of the scalar/node argument. */
#define FLINT_GENERIC_B_(name, a, b)                                                          \
  _Generic((b), FGraphNode *: name##_g, int: name##_ci, long: name##_cl, long long: name##_cl, \
           float: name##_cf, double: name##_cd)(a, b)
#define FLINT_GENERIC_AB_(name, a, b)                                                     \
  _Generic((a), int: name##_ici, long: name##_icl, long long: name##_icl, float: name##_icf, \
           double: name##_icd,                                                            \
           default: _Generic((b), FGraphNode *: name##_g, int: name##_ci, long: name##_cl,   \
                             long long: name##_cl, float: name##_cf, double: name##_cd))(a, b)
#define fadd(a, b) FLINT_GENERIC_B_(fadd, a, b)
#define fsub(a, b) FLINT_GENERIC_AB_(fsub, a, b)
#define fmul(a, b) FLINT_GENERIC_B_(fmul, a, b)
#define fdiv(a, b) FLINT_GENERIC_AB_(fdiv, a, b)
#define fpow(a, b) FLINT_GENERIC_B_(fpow, a, b)
#define fless(a, b) FLINT_GENERIC_B_(fless, a, b)
#define fgreater(a, b) FLINT_GENERIC_B_(fgreater, a, b)
#define fequal(a, b) FLINT_GENERIC_B_(fequal, a, b)
#define fconstant(value, shape, dimensions)                                          \
  _Generic((value), int: fconstant_i, long: fconstant_l, long long: fconstant_l,      \
           float: fconstant_f, double: fconstant_d)(value, shape, dimensions)

#endif /* __cplusplus / C11 */

#endif /* FLINT_H */
