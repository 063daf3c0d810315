from typing import Literal

DownloadFormat = Literal["onnx", "safetensors"]

DOWNLOAD_FORMAT_VALUES: set[DownloadFormat] = {
    "onnx",
    "safetensors",
}


def check_download_format(value: str) -> DownloadFormat:
    if value in DOWNLOAD_FORMAT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(DOWNLOAD_FORMAT_VALUES)!r}")
