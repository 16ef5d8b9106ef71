"""One SparkSession per test process, shared by every Spark test (they all run in the xdist group "spark", so
only one worker starts a JVM)."""

import sys
import types

import pytest

from reports.session import get_spark

try:
    import pyspark.pandas  # noqa: F401

    HAS_PANDAS_ON_SPARK = True
except ImportError:  # pandas >= 3, or no pandas / pyarrow
    HAS_PANDAS_ON_SPARK = False


def allow_dataframe_asserts_without_pandas_on_spark() -> None:
    """pyspark.testing.assertDataFrameEqual imports pyspark.pandas whenever pandas and pyarrow are installed, and
    that import fails with pandas >= 3 (PySpark 4 supports pandas < 3). These tests compare Spark DataFrames only,
    so a stand-in module is enough; where pyspark.pandas imports, it is used as is."""
    if not HAS_PANDAS_ON_SPARK:
        stand_in = types.ModuleType("pyspark.pandas")
        stand_in.DataFrame = type("DataFrame", (), {})
        utils = types.ModuleType("pyspark.testing.pandasutils")
        utils.PandasOnSparkTestUtils = type("PandasOnSparkTestUtils", (), {})
        sys.modules.update({"pyspark.pandas": stand_in, "pyspark.testing.pandasutils": utils})


@pytest.fixture(scope="session")
def spark():
    allow_dataframe_asserts_without_pandas_on_spark()
    session = get_spark("local[2]", app_name="rmqspec-reports-tests", quick_start=True)
    yield session
    session.stop()
