from .catalog_sensor import catalog_sensor
from .comparison_sensor import comparison_sensor
from .run_folder_sensor import run_folder_sensor

__all__ = ["catalog_sensor", "comparison_sensor", "run_folder_sensor"]
