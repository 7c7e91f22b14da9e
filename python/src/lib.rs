//! `edgewise_features`: Python reads the feature vectors `edgewised` publishes, in place.
//!
//! ```python
//! from edgewise_features import Reader
//! with Reader("/var/lib/edgewise/features") as reader:
//!     vector = reader.get("users", 42)      # memoryview of float32, or None
//!     scores = numpy.frombuffer(vector, dtype=numpy.float32)
//! ```
//!
//! `get` returns a read-only `memoryview` over the vector in the store's mapped file, no copy.
//! It stays readable for as long as it lives (the view keeps the file mapped), and unchanged
//! until the reader's next call, `release()` or `close()`: until then the daemon's publishes
//! wait for it (its grace period at most). Copy what you keep (`bytes(v)`, `numpy.array(...)`).
//! Give each thread its own reader: calls on one reader are serialized.

use std::{
    ffi::{c_char, c_int, c_void},
    sync::{Mutex, MutexGuard, PoisonError},
};

use edgewise::{FeatureReader, Mapping, StoreError};
use pyo3::{
    create_exception,
    exceptions::{PyBufferError, PyException, PyValueError},
    ffi,
    prelude::*,
    sync::MutexExt,
    types::PyMemoryView,
};

create_exception!(
    edgewise_features,
    FeatureStoreError,
    PyException,
    "The feature store could not be read: missing, not published yet, damaged, or busy."
);

/// A reader of one feature store directory.
#[pyclass(module = "edgewise_features")]
struct Reader {
    /// None once closed.
    inner: Mutex<Option<FeatureReader>>,
}

/// One vector in a mapped store file, exported as a read-only float32 buffer.
#[pyclass(module = "edgewise_features", frozen)]
struct Vector {
    /// Keeps the file mapped while any view of the vector lives.
    _mapping: Mapping,
    /// The first float, in the mapping (an address: raw pointers are not `Send`).
    address: usize,
    /// Floats, as the buffer's one dimension.
    shape: isize,
}

fn store_error(error: StoreError) -> PyErr {
    FeatureStoreError::new_err(error.to_string())
}

impl Reader {
    /// The open reader, locked. The lock is taken detached from the interpreter (no deadlock
    /// with a thread holding it while the interpreter stops the world) and must be dropped
    /// before calling into Python (a finalizer there may use this reader).
    fn open(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Option<FeatureReader>>> {
        let inner = self
            .inner
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner);
        match *inner {
            Some(_) => Ok(inner),
            None => Err(PyValueError::new_err("the reader is closed")),
        }
    }
}

#[pymethods]
impl Reader {
    /// Opens the store in directory `dir` (`features.dir` of edgewised).
    #[new]
    fn new(dir: std::path::PathBuf) -> PyResult<Reader> {
        let reader = FeatureReader::open(&dir).map_err(store_error)?;
        Ok(Reader {
            inner: Mutex::new(Some(reader)),
        })
    }

    /// The features of `key` in `table`: a read-only memoryview of float32, or None.
    fn get<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        key: u64,
    ) -> PyResult<Option<Bound<'py, PyMemoryView>>> {
        let mut inner = self.open(py)?;
        let Some(reader) = inner.as_mut() else {
            return Ok(None);
        };
        let guard = reader.read().map_err(store_error)?;
        let Some(values) = guard.table(table).and_then(|t| t.get(key)) else {
            return Ok(None);
        };
        let (address, shape) = (values.as_ptr() as usize, values.len() as isize);
        let Some(mapping) = guard.mapping() else {
            return Ok(None);
        };
        // The vector stays unchanged until this reader's next call.
        guard.keep();
        drop(inner);
        let vector = Bound::new(
            py,
            Vector {
                _mapping: mapping,
                address,
                shape,
            },
        )?;
        PyMemoryView::from(vector.as_any()).map(Some)
    }

    /// The version the reader serves now.
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<u64> {
        let mut inner = self.open(py)?;
        let Some(reader) = inner.as_mut() else {
            return Ok(0);
        };
        let version = reader.read().map_err(store_error)?.version();
        Ok(version)
    }

    /// Lets the daemon overwrite the vector the last `get` returned.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(reader) = self.open(py)?.as_mut() {
            reader.release();
        }
        Ok(())
    }

    /// Closes the reader (its views stay readable); closing twice is harmless.
    fn close(&self, py: Python<'_>) {
        let reader = self
            .inner
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(reader);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _traceback: Option<Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}

/// The buffer's item format: one native float32.
static FORMAT: &std::ffi::CStr = c"f";
/// The buffer's one stride, in bytes. Static, not in the `Py_buffer`: consumers may copy the
/// struct (CPython's `PyMemoryView_FromBuffer` does).
static STRIDE: isize = 4;

#[pymethods]
impl Vector {
    /// # Safety
    /// `view` is NULL or a `Py_buffer` for Python to fill (the buffer protocol's contract).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            // SAFETY: `view` is a Py_buffer to fill; on failure the protocol wants `obj` NULL.
            unsafe { (*view).obj = std::ptr::null_mut() };
            return Err(PyBufferError::new_err("feature vectors are read-only"));
        }
        let vector = slf.get();
        let shape = std::ptr::addr_of!(vector.shape).cast_mut();
        // SAFETY: `view` is a Py_buffer to fill. Every pointer stored lives as long as the
        // view: the floats are in the mapping `vector` holds, `shape` is a field of `vector`,
        // the stride and the format are statics; `obj` keeps `vector` alive.
        unsafe {
            (*view).buf = vector.address as *mut c_void;
            (*view).len = vector.shape * 4;
            (*view).readonly = 1;
            (*view).itemsize = 4;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                FORMAT.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut::<c_char>()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                shape
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                std::ptr::addr_of!(STRIDE).cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
            (*view).obj = slf.into_any().into_ptr();
        }
        Ok(())
    }

    /// Nothing to free: the format is static, the rest belongs to the vector.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}

#[pymodule]
fn edgewise_features(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Reader>()?;
    module.add(
        "FeatureStoreError",
        module.py().get_type::<FeatureStoreError>(),
    )?;
    Ok(())
}
