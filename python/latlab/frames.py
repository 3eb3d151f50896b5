"""Arrow IPC bytes in, pandas DataFrames out, Parquet files on disk.

One conversion policy for every table: integers stay integers. Columns that
may hold nulls (``size_bytes``, ``fct_ns``, or any integer column that has a
null) become pandas nullable integers (``Int64``) instead of pandas' default
of float64 with NaN, so their dtype does not depend on whether this
particular run happened to have a null.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from latlab import _atomic
from latlab.schema import NULLABLE_INT_COLUMNS

_NULLABLE_INT = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.UInt8Dtype(),
    pa.uint16(): pd.UInt16Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
}

# Parquet settings fixed here so that equal tables give byte-identical files.
_PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}


def read_ipc_stream(data: bytes) -> pa.Table:
    """Decode Arrow IPC *stream* bytes (what ``_core.Simulation.results()`` returns)."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow table -> DataFrame with the nullable-integer policy of this module."""
    df = table.to_pandas()
    nullable = [
        f.name
        for f, col in zip(table.schema, table.columns)
        if f.type in _NULLABLE_INT and (f.name in NULLABLE_INT_COLUMNS or col.null_count > 0)
    ]
    if nullable:
        sub = table.select(nullable).to_pandas(types_mapper=_NULLABLE_INT.get)
        for name in nullable:
            df[name] = sub[name]
    return df


def empty_frame(columns: Iterable[str]) -> pd.DataFrame:
    """A table with the documented columns and no rows."""
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


def write_parquet(df: pd.DataFrame, path: Path) -> Path:
    """Write one DataFrame as a Parquet file, atomically."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    return _atomic.write_with(path, lambda tmp: pq.write_table(table, tmp, **_PARQUET_OPTIONS))


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet file written by :func:`write_parquet` (dtypes restored from its pandas metadata)."""
    return pq.read_table(path).to_pandas()
