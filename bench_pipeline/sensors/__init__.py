from .run_folder_sensor import run_folder_sensor

__all__ = ["run_folder_sensor"]
