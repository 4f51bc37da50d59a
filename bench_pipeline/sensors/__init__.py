from .catalog_sensor import catalog_sensor
from .run_folder_sensor import run_folder_sensor

__all__ = ["catalog_sensor", "run_folder_sensor"]
