import { $, openClub, readAll } from './club.js';

const club = await openClub();
$('count-members').textContent = club.members;
$('count-tables').textContent = club.tables;
const seasons = await readAll('/seasons');
if (seasons.ok) $('count-seasons').textContent = seasons.items.length;
